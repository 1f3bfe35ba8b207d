"""INBOX_RETENTION_DAYS: how long COMPLETED records outlive redelivery windows."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lambda_inbox import ConfigurationError, InboxConfig


def test_retention_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INBOX_TABLE", "inbox")
    monkeypatch.setenv("INBOX_RETENTION_DAYS", "21")
    assert InboxConfig.from_env("order-events").retention == timedelta(days=21)


def test_default_retention_is_seven_days(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INBOX_TABLE", "inbox")
    monkeypatch.delenv("INBOX_RETENTION_DAYS", raising=False)
    assert InboxConfig.from_env("order-events").retention == timedelta(days=7)


@pytest.mark.parametrize(
    ("days", "message"), [("a week", "INBOX_RETENTION_DAYS"), ("0", "retention must be positive")]
)
def test_bad_retention_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, days: str, message: str
) -> None:
    monkeypatch.setenv("INBOX_TABLE", "inbox")
    monkeypatch.setenv("INBOX_RETENTION_DAYS", days)
    with pytest.raises(ConfigurationError, match=message):
        InboxConfig.from_env("order-events")
