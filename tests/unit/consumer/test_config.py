"""InboxConfig / RetryPolicy validation and the environment-based defaults, among them
INBOX_RETENTION_DAYS: how long COMPLETED records outlive redelivery windows."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from lambda_inbox import (
    Clients,
    ConfigurationError,
    Decide,
    GroupCommit,
    InboxConfig,
    InboxConsumer,
    Leased,
    Retention,
    RetryPolicy,
    SourceSettings,
)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"consumer": ""}, "consumer must be"),
        ({"consumer": "a#b"}, "without '#'"),
        ({"inbox_table": ""}, "inbox_table is required"),
        ({"retention": timedelta(days=1)}, "retention must be a Retention, not timedelta"),
        ({"commit": 4}, "commit must be a GroupCommit, not int"),
    ],
)
def test_invalid_config_is_refused(overrides: dict[str, Any], message: str) -> None:
    values: dict[str, Any] = {"consumer": "c", "inbox_table": "t", **overrides}
    with pytest.raises(ConfigurationError, match=message):
        InboxConfig(**values)


@pytest.mark.parametrize(
    ("group", "values", "message"),
    [
        (Retention, {"completed": timedelta(0)}, "must be positive"),
        (Retention, {"failed": timedelta(0)}, "must be positive"),
        (Retention, {"snapshot_bytes": -1}, ">= 0"),
        (GroupCommit, {"max_transaction_actions": 1}, "between 2 and 100"),
        (GroupCommit, {"max_transaction_actions": 101}, "between 2 and 100"),
        (GroupCommit, {"max_group_messages": 0}, ">= 1"),
        (GroupCommit, {"max_parallel_commits": 0}, ">= 1"),
        (SourceSettings, {"fifo_failure_mode": "pause"}, "one of stop, skip-group, not 'pause'"),
    ],
)
def test_invalid_groups_are_refused(group: Any, values: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        group(**values)


@pytest.mark.parametrize(
    "values",
    [{"max_attempts": 0}, {"base_delay": 0}, {"base_delay": 2.0, "max_delay": 1.0}],
)
def test_invalid_retry_policy_is_refused(values: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        RetryPolicy(**values)


def test_from_env_reads_table_and_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INBOX_TABLE", "inbox-t")
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", "https://sqs/dlq")
    config = InboxConfig.from_env("c", commit=GroupCommit(max_group_messages=5))
    assert (config.inbox_table, config.dead_letter_queue_url) == ("inbox-t", "https://sqs/dlq")
    assert config.commit.max_group_messages == 5
    assert config.retention.completed == timedelta(days=7)
    assert config.sources.fifo_failure_mode == "stop"
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", "")
    assert InboxConfig.from_env("c").dead_letter_queue_url is None


def test_from_env_without_inbox_table_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INBOX_TABLE", raising=False)
    with pytest.raises(ConfigurationError, match="INBOX_TABLE is not set"):
        InboxConfig.from_env("c")
    assert InboxConfig.from_env("c", inbox_table="explicit").inbox_table == "explicit"


def test_consumer_name_must_match_its_config() -> None:
    with pytest.raises(ConfigurationError, match=r"differs from config\.consumer"):
        InboxConsumer(
            "a",
            model=dict,
            decide=lambda payload, uow: None,
            config=InboxConfig(consumer="b", inbox_table="t"),
        )


def decide(payload: Any, uow: Any) -> None:
    uow.set_result(outcome="decided")


def fallback(payload: Any, failed: Any, uow: Any) -> None:
    uow.set_result(outcome="fallback")


def a_consumer(**groups: Any) -> InboxConsumer[Any]:
    config = InboxConfig(consumer="c", inbox_table="t")
    clients = Clients(dynamodb=object())  # type: ignore[arg-type]  # never called
    return InboxConsumer("c", model=dict, config=config, clients=clients, **groups)


def test_decide_is_a_function_or_a_decide_and_nothing_else() -> None:
    plain = a_consumer(decide=decide).pipeline._decider
    grouped = a_consumer(decide=Decide(decide, on_condition_failed=fallback)).pipeline._decider
    assert (plain._decide, plain._on_condition_failed) == (decide, None)
    assert (grouped._decide, grouped._on_condition_failed) == (decide, fallback)
    with pytest.raises(
        ConfigurationError, match="decide must be a function, a Decide or a CreatesItem"
    ):
        a_consumer(decide=object())


def test_leased_mode_needs_a_callable_side_effect() -> None:
    assert a_consumer(decide=decide).pipeline._leases is None
    assert a_consumer(decide=decide, leased=Leased(print)).pipeline._leases is not None
    with pytest.raises(ConfigurationError, match="needs a callable side_effect"):
        a_consumer(decide=decide, leased=Leased("not callable"))  # type: ignore[arg-type]


def test_the_groups_compare_by_value() -> None:
    assert Decide(decide, on_condition_failed=fallback) == Decide(decide, fallback)
    assert Decide(decide) != Decide(decide, fallback)
    assert repr(Clients()) == "Clients(dynamodb=None, sqs=None)"


@pytest.mark.parametrize(
    ("days", "retention"), [("21", timedelta(days=21)), (None, timedelta(days=7))]
)
def test_retention_comes_from_the_environment_and_defaults_to_seven_days(
    monkeypatch: pytest.MonkeyPatch, days: str | None, retention: timedelta
) -> None:
    monkeypatch.setenv("INBOX_TABLE", "inbox")
    if days is None:
        monkeypatch.delenv("INBOX_RETENTION_DAYS", raising=False)
    else:
        monkeypatch.setenv("INBOX_RETENTION_DAYS", days)
    assert InboxConfig.from_env("order-events").retention.completed == retention


@pytest.mark.parametrize(
    ("days", "message"), [("a week", "INBOX_RETENTION_DAYS"), ("0", "must be positive")]
)
def test_bad_retention_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, days: str, message: str
) -> None:
    monkeypatch.setenv("INBOX_TABLE", "inbox")
    monkeypatch.setenv("INBOX_RETENTION_DAYS", days)
    with pytest.raises(ConfigurationError, match=message):
        InboxConfig.from_env("order-events")


@pytest.mark.parametrize(
    ("days", "retention"), [("3", timedelta(days=3)), (None, timedelta(days=14))]
)
def test_the_failed_retention_comes_from_the_environment_and_defaults_to_fourteen_days(
    monkeypatch: pytest.MonkeyPatch, days: str | None, retention: timedelta
) -> None:
    monkeypatch.setenv("INBOX_TABLE", "inbox")
    if days is None:
        monkeypatch.delenv("INBOX_FAILED_RETENTION_DAYS", raising=False)
    else:
        monkeypatch.setenv("INBOX_FAILED_RETENTION_DAYS", days)
    assert InboxConfig.from_env("order-events").retention.failed == retention


def test_a_bad_failed_retention_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INBOX_TABLE", "inbox")
    monkeypatch.setenv("INBOX_FAILED_RETENTION_DAYS", "two weeks")
    with pytest.raises(ConfigurationError, match="INBOX_FAILED_RETENTION_DAYS"):
        InboxConfig.from_env("order-events")


def test_parallel_commits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INBOX_TABLE", "inbox")
    monkeypatch.setenv("INBOX_MAX_PARALLEL_COMMITS", "1")
    assert InboxConfig.from_env("c").commit.max_parallel_commits == 1
    # A variable sets what a group given in code leaves at its default, and nothing else.
    given = InboxConfig.from_env("c", commit=GroupCommit(max_group_messages=5))
    assert (given.commit.max_group_messages, given.commit.max_parallel_commits) == (5, 1)
    chosen = InboxConfig.from_env("c", commit=GroupCommit(max_parallel_commits=8))
    assert chosen.commit.max_parallel_commits == 8
    monkeypatch.setenv("INBOX_MAX_PARALLEL_COMMITS", "two")
    with pytest.raises(ConfigurationError, match="whole number"):
        InboxConfig.from_env("c")
    monkeypatch.delenv("INBOX_MAX_PARALLEL_COMMITS")
    assert InboxConfig.from_env("c").commit.max_parallel_commits == 4


def test_settings_compare_by_value_and_replace_checks_the_copy() -> None:
    config = InboxConfig("orders", "inbox", retry=RetryPolicy(max_attempts=3))
    assert config == InboxConfig("orders", "inbox", retry=RetryPolicy(max_attempts=3))
    assert hash(config) == hash(InboxConfig("orders", "inbox", retry=RetryPolicy(max_attempts=3)))
    assert config != InboxConfig("orders", "inbox")
    assert "max_parallel_commits=4" in repr(config)
    wider = config.replace(commit=config.commit.replace(max_parallel_commits=8))
    assert (wider.commit.max_parallel_commits, wider.retry, config.commit.max_parallel_commits) == (
        8,
        RetryPolicy(max_attempts=3),
        4,
    )
    with pytest.raises(ConfigurationError, match="max_parallel_commits"):
        config.commit.replace(max_parallel_commits=0)


def not_in_the_settings_style(classes: list[type]) -> list[str]:
    """The settings classes that do not share the one settings base (`_Settings`)."""
    from lambda_inbox._internal import _Settings

    return [kind.__name__ for kind in classes if not issubclass(kind, _Settings)]


def test_every_settings_class_is_of_one_style_and_frozen() -> None:
    import lambda_inbox
    from lambda_inbox.reaper import ReaperSettings

    names = [
        "InboxConfig",
        "Retention",
        "GroupCommit",
        "SourceSettings",
        "RetryPolicy",
        "LeasePolicy",
        "DecodingLimits",
        "Decide",
        "Leased",
        "Clients",
        "Observability",
    ]
    classes = [getattr(lambda_inbox, name) for name in names] + [ReaperSettings]
    assert not_in_the_settings_style(classes) == []
    policy = RetryPolicy()
    with pytest.raises(AttributeError, match="frozen"):
        policy.max_attempts = 2
    assert policy.replace(max_attempts=2).max_attempts == 2


def test_a_settings_class_of_another_style_is_found() -> None:
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Elsewhere:
        size: int = 1

    assert not_in_the_settings_style([Retention, Elsewhere]) == ["Elsewhere"]
