"""Leased mode on DynamoDB Local: claims, takeover, lost leases, attempts and the webhook example.

The webhook is a real HTTP server on 127.0.0.1 (see webhook.py); the DLQ is on the moto server.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from devkit.emf import emf_records
from devkit.events import delivered_again, failed_ids, sqs_event, sqs_record
from devkit.handlers import load_function
from devkit.leases import crashed_claim
from devkit.tables import LocalTables
from lambda_inbox import (
    InboxConfig,
    InboxConsumer,
    KeyStrategy,
    LeaseContext,
    Leased,
    LeasePolicy,
    Outcome,
)
from lambda_inbox.store import Status, get_record
from lambda_inbox.wire import parse_sqs_event
from lambda_inbox_tools.services.offline import local_client
from tests.integration.leased.helpers import attribute, drain, scan
from tests.integration.leased.webhook import Webhook, running_webhook

CONSUMER = "customer-notifications"


def notification(event_id: str, customer_id: str = "cust-1") -> dict[str, str]:
    return {
        "event_id": event_id,
        "customer_id": customer_id,
        "order_id": f"order-{event_id}",
        "template": "order-shipped",
    }


class Recorder:
    """A side effect that records its calls and does what it is told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.lock = threading.Lock()
        self.before: Any = None

    def __call__(self, payload: dict[str, Any], lease: LeaseContext) -> None:
        with self.lock:
            self.calls.append((lease.message_key, lease.attempt))
        if self.before is not None:
            action, self.before = self.before, None
            action(payload, lease)


def leased_consumer(
    tables: LocalTables, side_effect: Recorder, *, lease: float = 1.0, max_attempts: int = 5
) -> InboxConsumer[dict[str, Any]]:
    def decide(payload: dict[str, Any], uow: Any) -> None:
        uow.put(
            tables.domain,
            {
                "pk": f"CUSTOMER#{payload['customer_id']}",
                "sk": f"NOTIFICATION#{payload['event_id']}",
            },
            condition="attribute_not_exists(pk)",
        )

    return InboxConsumer(
        CONSUMER,
        model=dict,
        decide=decide,
        key="event_id",
        config=InboxConfig.from_env(CONSUMER),
        leased=Leased(
            side_effect,
            lease=LeasePolicy(duration=timedelta(seconds=lease), max_attempts=max_attempts),
        ),
    )


def notifications(tables: LocalTables) -> list[dict[str, Any]]:
    return [item for item in scan(tables, tables.domain) if item["sk"].startswith("NOTIFICATION#")]


def test_lease_takeover_after_expiry(leased_env: LocalTables) -> None:
    tables = leased_env
    side_effect = Recorder()
    consumer = leased_consumer(tables, side_effect, lease=1.0)
    record = sqs_record(notification("evt-1"))
    # A first delivery claimed the message, then its process died (no side effect, no commit).
    (message,) = parse_sqs_event(sqs_event(record))
    crashed_claim(
        consumer.dynamodb,
        table=tables.inbox,
        consumer=CONSUMER,
        message=message,
        keys=KeyStrategy.from_body("event_id"),
        claimed_at=time.time() - 30,
    )  # a 60 s lease, 30 s left
    stored = get_record(tables.client, tables.inbox, CONSUMER, "evt-1")
    assert stored is not None and stored.status is Status.IN_PROGRESS and stored.attempts == 1
    assert stored.payload_snapshot == record["body"].encode()

    # While the lease lives, a redelivery is reported in_progress and calls nothing.
    [result] = consumer.process(parse_sqs_event(sqs_event(delivered_again(record))))
    assert (result.outcome, result.error_code) == (Outcome.FAILED, "in_progress")
    assert side_effect.calls == []

    # The lease expires (its expiry moved into the past rather than waited for, so a slow
    # machine cannot expire it early): the next delivery takes over, counting the attempt.
    tables.client.update_item(
        TableName=tables.inbox,
        Key={"pk": {"S": f"{CONSUMER}#evt-1"}},
        UpdateExpression="SET lease_expires_at = :past",
        ExpressionAttributeValues={":past": {"N": f"{time.time() - 1:.3f}"}},
    )
    response = consumer.handle(sqs_event(delivered_again(record)))
    assert failed_ids(response) == []
    assert side_effect.calls == [("evt-1", 2)]
    stored = get_record(tables.client, tables.inbox, CONSUMER, "evt-1")
    assert stored is not None and stored.status is Status.COMPLETED
    assert len(notifications(tables)) == 1


def test_late_completion_after_losing_the_lease_commits_nothing(
    leased_env: LocalTables, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    tables = leased_env
    slow, fast = Recorder(), Recorder()
    first = leased_consumer(tables, slow, lease=0.5)
    second = leased_consumer(tables, fast, lease=5.0)
    record = sqs_record(notification("evt-late"))
    takeover: list[Any] = []

    def stall_then_lose(payload: dict[str, Any], lease: LeaseContext) -> None:
        time.sleep(0.7)  # past our lease: another delivery takes over and completes
        takeover.extend(second.process(parse_sqs_event(sqs_event(delivered_again(record)))))

    slow.before = stall_then_lose
    capsys.readouterr()
    [late] = first.process(parse_sqs_event(sqs_event(record)))

    assert [r.outcome for r in takeover] == [Outcome.COMMITTED]
    assert fast.calls == [("evt-late", 2)]
    assert (late.outcome, late.error_code) == (Outcome.FAILED, "lease_lost")
    assert len(notifications(tables)) == 1
    stored = get_record(tables.client, tables.inbox, CONSUMER, "evt-late")
    assert stored is not None and stored.status is Status.COMPLETED
    output = capsys.readouterr().out
    assert "lease lost; the completion was not committed" in caplog.messages
    metrics = [r for r in emf_records(output) if "LeasesLost" in r]
    assert metrics and metrics[0]["LeasesLost"] == [1.0]
    # The redelivery of the late one is now a plain duplicate: no side effect.
    [again] = first.process(parse_sqs_event(sqs_event(delivered_again(record))))
    assert again.outcome is Outcome.DUPLICATE
    assert len(slow.calls) == 1


def test_attempts_exhausted_dead_letters_and_marks_failed(
    leased_env: LocalTables, dlq_url: str, moto_server_endpoint: str
) -> None:
    tables = leased_env
    side_effect = Recorder()

    def boom(payload: dict[str, Any], lease: LeaseContext) -> None:
        raise ConnectionError("provider down")

    consumer = leased_consumer(tables, side_effect, lease=0.3, max_attempts=2)
    record = sqs_record(notification("evt-doomed"))
    side_effect.before = boom
    [first] = consumer.process(parse_sqs_event(sqs_event(record)))
    assert (first.outcome, first.error_code) == (Outcome.FAILED, "side_effect_failed")
    stored = get_record(tables.client, tables.inbox, CONSUMER, "evt-doomed")
    assert stored is not None and stored.status is Status.IN_PROGRESS
    assert stored.error_code == "side_effect_failed" and "provider down" in (
        stored.last_error or ""
    )

    time.sleep(0.4)
    side_effect.before = boom
    [second] = consumer.process(parse_sqs_event(sqs_event(delivered_again(record))))
    assert (second.outcome, second.error_code) == (Outcome.DEAD_LETTERED, "attempts_exhausted")
    assert side_effect.calls == [("evt-doomed", 1), ("evt-doomed", 2)]
    stored = get_record(tables.client, tables.inbox, CONSUMER, "evt-doomed")
    assert stored is not None and stored.status is Status.FAILED and stored.dead_lettered_at
    [dead] = drain(local_client("sqs", moto_server_endpoint), dlq_url)
    assert attribute(dead, "inbox-error-code") == "attempts_exhausted"
    assert json.loads(dead["Body"])["event_id"] == "evt-doomed"
    assert notifications(tables) == []


def test_release_on_failure_makes_the_message_claimable_at_once(leased_env: LocalTables) -> None:
    side_effect = Recorder()

    def boom(payload: dict[str, Any], lease: LeaseContext) -> None:
        raise TimeoutError("provider slow")

    consumer = InboxConsumer(
        CONSUMER,
        model=dict,
        decide=lambda payload, uow: None,
        key="event_id",
        leased=Leased(
            side_effect, lease=LeasePolicy(duration=timedelta(seconds=60), release_on_failure=True)
        ),
    )
    record = sqs_record(notification("evt-release"))
    side_effect.before = boom
    [first] = consumer.process(parse_sqs_event(sqs_event(record)))
    assert first.error_code == "side_effect_failed"
    [second] = consumer.process(parse_sqs_event(sqs_event(delivered_again(record))))
    assert second.outcome is Outcome.COMMITTED
    assert side_effect.calls == [("evt-release", 1), ("evt-release", 2)]


def test_duplicate_filter_and_batch_followers_keep_working(leased_env: LocalTables) -> None:
    tables = leased_env
    side_effect = Recorder()
    consumer = leased_consumer(tables, side_effect, lease=30)
    a, b = sqs_record(notification("evt-a")), sqs_record(notification("evt-b", "cust-2"))
    a_again = sqs_record(notification("evt-a"))  # a producer retry: new messageId, same key
    results = consumer.process(parse_sqs_event(sqs_event(a, b, a_again)))
    assert [r.outcome for r in results] == [Outcome.COMMITTED, Outcome.COMMITTED, Outcome.DUPLICATE]
    assert sorted(side_effect.calls) == [("evt-a", 1), ("evt-b", 1)]
    again = consumer.process(parse_sqs_event(sqs_event(delivered_again(a), delivered_again(b))))
    assert [r.outcome for r in again] == [Outcome.DUPLICATE, Outcome.DUPLICATE]
    assert len(side_effect.calls) == 2
    assert len(notifications(tables)) == 2


def test_webhook_fails_then_times_out_then_succeeds(
    leased_env: LocalTables, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables = leased_env
    with running_webhook(Webhook([503, "timeout", "ok"], slow_seconds=1.5)) as webhook:
        monkeypatch.setenv("NOTIFY_WEBHOOK_URL", webhook.url)
        monkeypatch.setenv("NOTIFY_LEASE_SECONDS", "1")
        app = load_function("customer_notifications")
        record = sqs_record(notification("evt-hook"))
        other = sqs_record(notification("evt-other", "cust-2"))

        # 503: transient, the lease is kept.
        assert failed_ids(app.handler(sqs_event(record), None)) == [record["messageId"]]
        time.sleep(1.1)
        # The receiver takes 1.5 s: the call times out at the lease's end (it was accepted).
        assert failed_ids(app.handler(sqs_event(delivered_again(record)), None)) == [
            record["messageId"]
        ]
        time.sleep(0.2)
        # 2xx (the receiver recognises the key): the notification commits.
        response = app.handler(sqs_event(delivered_again(record), other), None)
        assert failed_ids(response) == []
        # Redelivered again: a duplicate, no call.
        assert failed_ids(app.handler(sqs_event(delivered_again(record)), None)) == []

        assert webhook.calls == {"evt-hook": 3, "evt-other": 1}
        assert webhook.accepted == {"evt-hook": 1, "evt-other": 1}
        body = json.loads(webhook.bodies[0])
        assert body == {
            "customer_id": "cust-1",
            "order_id": "order-evt-hook",
            "template": "order-shipped",
        }
    items = notifications(tables)
    assert sorted(item["sk"] for item in items) == [
        "NOTIFICATION#evt-hook",
        "NOTIFICATION#evt-other",
    ]
    assert all(item["status"] == "SENT" for item in items)


def test_webhook_refusal_is_poison(
    leased_env: LocalTables,
    dlq_url: str,
    moto_server_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tables = leased_env
    with running_webhook(Webhook([422])) as webhook:
        monkeypatch.setenv("NOTIFY_WEBHOOK_URL", webhook.url)
        app = load_function("customer_notifications")
        record = sqs_record(notification("evt-bad"))
        assert failed_ids(app.handler(sqs_event(record), None)) == []
    [dead] = drain(local_client("sqs", moto_server_endpoint), dlq_url)
    assert attribute(dead, "inbox-error-code") == "rejected_by_handler"
    assert "HTTP 422" in attribute(dead, "inbox-error")
    stored = get_record(tables.client, tables.inbox, CONSUMER, "evt-bad")
    assert stored is not None and stored.status is Status.FAILED
    assert notifications(tables) == []
