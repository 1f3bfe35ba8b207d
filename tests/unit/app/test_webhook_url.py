"""customer_notifications opens only https webhook URLs (plain http only to loopback, or to the
hosts a local container run names): anything else stops the function at import with a
ConfigurationError, before any message is taken."""

from __future__ import annotations

from types import ModuleType

import pytest

from devkit.app_state import AppState
from devkit.handlers import load_function
from lambda_inbox import ConfigurationError


@pytest.fixture
def notifications(aws: AppState, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("NOTIFY_WEBHOOK_URL", "https://hooks.example.com/notify")
    return load_function("customer_notifications")


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/notify",
        "http://127.0.0.1:8080/notify",
        "http://127.9.9.9/notify",
        "http://localhost:9000/notify",
        "http://[::1]:9000/notify",
        "",  # not configured: calls fail transiently, nothing is opened
    ],
)
def test_accepted_urls(notifications: ModuleType, url: str) -> None:
    assert notifications.checked_webhook_url(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://hooks.example.com/notify",
        "http://hooks.example.com/notify",
        "http://172.17.0.1:8080/notify",
        "https:///no-host",
        "hooks.example.com/notify",
    ],
)
def test_refused_urls(notifications: ModuleType, url: str) -> None:
    with pytest.raises(ConfigurationError, match="NOTIFY_WEBHOOK_URL must be an https URL"):
        notifications.checked_webhook_url(url)


def test_plain_http_to_a_named_host_for_local_container_runs(notifications: ModuleType) -> None:
    url = "http://172.17.0.1:8080/notify"
    assert notifications.checked_webhook_url(url, "172.17.0.1") == url
    with pytest.raises(ConfigurationError):
        notifications.checked_webhook_url(url, "10.0.0.1")


def test_a_bad_url_stops_the_function_at_import(
    aws: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTIFY_WEBHOOK_URL", "file:///etc/passwd")
    with pytest.raises(ConfigurationError, match="not file://"):
        load_function("customer_notifications")
