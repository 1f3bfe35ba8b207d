"""The reaper on DynamoDB Local (and SQS on the moto server): transitions, exactly-once
dead-lettering across concurrent runs, the deadline stop and resume, and a poison storm spread
over the open-records index shards."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from typing import Any

import pytest

from devkit.emf import emf_records, metric_value
from devkit.events import sqs_event, sqs_record
from devkit.handlers import load_function
from devkit.leases import crashed_claim, identity_of
from devkit.tables import LocalTables
from lambda_inbox import InboundMessage, KeyStrategy
from lambda_inbox.reaper import Reaper, ReaperSettings, ReapSummary
from lambda_inbox.store import (
    OPEN_INDEX_SHARDS,
    OPEN_RECORDS_INDEX,
    InboxRecord,
    InboxStore,
    Status,
    get_record,
    open_index_pk,
    utc_iso,
)
from lambda_inbox.wire import parse_sqs_event
from lambda_inbox_tools.services.offline import local_client
from tests.integration.leased.helpers import attribute, drain

CONSUMER = "customer-notifications"
HOUR = 3600.0
KEYS = KeyStrategy.from_body("event_id")


def payload(key: str) -> dict[str, str]:
    return {"event_id": key, "customer_id": "c-1", "order_id": f"o-{key}", "template": "t"}


def message_of(key: str) -> InboundMessage:
    (message,) = parse_sqs_event(sqs_event(sqs_record(payload(key))))
    return message


def stuck_lease(tables: LocalTables, key: str, *, expired_ago: float = HOUR) -> None:
    """A claim whose process died: IN_PROGRESS with a lease that expired `expired_ago` ago."""
    crashed_claim(
        tables.client,
        table=tables.inbox,
        consumer=CONSUMER,
        message=message_of(key),
        keys=KEYS,
        claimed_at=time.time() - 60 - expired_ago,
    )


def failed_record(tables: LocalTables, key: str, *, dead_lettered: bool) -> None:
    store = InboxStore(tables.client, table=tables.inbox, consumer=CONSUMER, retention_seconds=60)
    message = message_of(key)
    _, fingerprint = identity_of(message, KEYS)
    assert store.mark_failed(
        message,
        key,
        fingerprint,
        error_code="lease_expired",
        error="test",
        now=time.time() - HOUR,
        dead_lettered=dead_lettered,
    )


def reaper(tables: LocalTables, dlq_url: str, moto: str, **settings: Any) -> Reaper:
    return Reaper(
        tables.client,
        ReaperSettings(table=tables.inbox, dead_letter_queues={CONSUMER: dlq_url}, **settings),
        sqs=local_client("sqs", moto),
    )


def test_reaper_transitions(
    leased_env: LocalTables, dlq_url: str, moto_server_endpoint: str
) -> None:
    tables = leased_env
    stuck_lease(tables, "live", expired_ago=-60)  # claimed now: its lease lives a minute
    stuck_lease(tables, "recent", expired_ago=10)  # within the grace: the redelivery claims it
    stuck_lease(tables, "stuck")
    failed_record(tables, "sent-by-consumer", dead_lettered=True)
    failed_record(tables, "pending", dead_lettered=False)
    sweeper = reaper(tables, dlq_url, moto_server_endpoint)
    sqs = local_client("sqs", moto_server_endpoint)

    preview = sweeper.reap_once(dry_run=True)
    assert (preview.reaped, preview.dead_lettered, preview.open) == (1, 2, 5)
    assert drain(sqs, dlq_url) == []
    assert get_record(tables.client, tables.inbox, CONSUMER, "stuck").status is Status.IN_PROGRESS  # type: ignore[union-attr]

    summary = sweeper.reap_once()
    assert (summary.reaped, summary.dead_lettered, summary.open) == (1, 2, 5)
    assert summary.consumers[CONSUMER].in_progress == 3
    assert summary.consumers[CONSUMER].failed == 2
    assert summary.oldest_open_age_seconds >= HOUR - 5
    messages = drain(sqs, dlq_url)
    by_key = {attribute(m, "inbox-message-key"): m for m in messages}
    assert sorted(by_key) == ["pending", "stuck"]
    assert attribute(by_key["stuck"], "inbox-error-code") == "lease_expired"
    assert attribute(by_key["stuck"], "inbox-consumer") == CONSUMER
    assert json.loads(by_key["stuck"]["Body"]) == payload("stuck")
    stuck = get_record(tables.client, tables.inbox, CONSUMER, "stuck")
    assert stuck is not None and stuck.status is Status.FAILED
    assert stuck.error_code == "lease_expired" and stuck.dead_lettered_at
    # Removed by TTL after the failed-record retention, as every FAILED record is.
    assert stuck.expires_at is not None and stuck.expires_at >= time.time() + 13 * 86_400
    live = get_record(tables.client, tables.inbox, CONSUMER, "live")
    assert live is not None and live.status is Status.IN_PROGRESS
    recent = get_record(tables.client, tables.inbox, CONSUMER, "recent")
    assert recent is not None and recent.status is Status.IN_PROGRESS

    again = sweeper.reap_once()
    assert (again.reaped, again.dead_lettered, again.open) == (0, 0, 5)
    assert drain(sqs, dlq_url) == []


def test_two_concurrent_runs_dead_letter_each_record_once(
    leased_env: LocalTables, dlq_url: str, moto_server_endpoint: str
) -> None:
    tables = leased_env
    keys = [f"stuck-{n:02d}" for n in range(20)] + [f"pending-{n:02d}" for n in range(20)]
    for key in keys:
        if key.startswith("stuck"):
            stuck_lease(tables, key)
        else:
            failed_record(tables, key, dead_lettered=False)
    start = threading.Barrier(2)
    summaries: list[ReapSummary] = []

    def run() -> None:
        sweeper = reaper(tables, dlq_url, moto_server_endpoint, page_size=5)
        start.wait()
        summaries.append(sweeper.reap_once())

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(s.dead_lettered for s in summaries) == 40
    assert sum(s.reaped for s in summaries) == 20
    sent = Counter(
        attribute(m, "inbox-message-key")
        for m in drain(local_client("sqs", moto_server_endpoint), dlq_url)
    )
    assert sent == dict.fromkeys(keys, 1)


def test_stops_before_the_deadline_and_resumes(
    leased_env: LocalTables, dlq_url: str, moto_server_endpoint: str
) -> None:
    tables = leased_env
    keys = [f"pending-{n:02d}" for n in range(12)]
    for key in keys:
        failed_record(tables, key, dead_lettered=False)
    budget = iter([60.0] * 5)

    def time_left() -> float:
        return next(budget, 1.0)  # then 1 s left: below the 5 s stop margin

    first = reaper(tables, dlq_url, moto_server_endpoint, page_size=3).reap_once(
        time_left=time_left
    )
    assert not first.complete
    assert first.dead_lettered == 5
    second = reaper(tables, dlq_url, moto_server_endpoint).reap_once()
    assert second.complete and second.dead_lettered == 7
    sent = Counter(
        attribute(m, "inbox-message-key")
        for m in drain(local_client("sqs", moto_server_endpoint), dlq_url)
    )
    assert sent == dict.fromkeys(keys, 1)


def test_poison_storm_spreads_over_the_index_shards(
    leased_env: LocalTables, dlq_url: str, moto_server_endpoint: str
) -> None:
    tables = leased_env
    total = 1600
    now = time.time()
    items = [
        InboxRecord(
            consumer=CONSUMER,
            message_key=f"poison-{n:05d}",
            status=Status.FAILED,
            error_code="invalid_payload",
            failed_at=utc_iso(now),
            dead_lettered_at=utc_iso(now),
            open_since=utc_iso(now - n / 1000),
        ).to_item()
        for n in range(total)
    ]
    for start in range(0, total, 25):
        requests: Any = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        while requests:
            response = tables.client.batch_write_item(RequestItems={tables.inbox: requests})
            requests = response.get("UnprocessedItems", {}).get(tables.inbox, [])
    per_shard = []
    for shard in range(OPEN_INDEX_SHARDS):
        counted = tables.client.query(
            TableName=tables.inbox,
            IndexName=OPEN_RECORDS_INDEX,
            KeyConditionExpression="gsi_open_pk = :pk",
            ExpressionAttributeValues={":pk": {"S": open_index_pk(Status.FAILED, shard)}},
            Select="COUNT",
        )
        per_shard.append(counted["Count"])
    assert sum(per_shard) == total
    mean = total / OPEN_INDEX_SHARDS
    assert min(per_shard) > 0.6 * mean and max(per_shard) < 1.4 * mean, per_shard

    scans: list[str] = []
    tables.client.meta.events.register(
        "before-call.dynamodb.Scan", lambda **kw: scans.append("scan")
    )
    summary = reaper(tables, dlq_url, moto_server_endpoint, page_size=500).reap_once()
    assert scans == []
    assert (summary.open, summary.reaped, summary.dead_lettered) == (total, 0, 0)
    assert drain(local_client("sqs", moto_server_endpoint), dlq_url) == []


def test_handler_returns_a_json_summary_with_only_the_table_set(
    leased_env: LocalTables, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tables = leased_env
    monkeypatch.delenv("DEAD_LETTER_QUEUE_URL")
    stuck_lease(tables, "stuck")

    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 60_000

    app = load_function("inbox_reaper")
    capsys.readouterr()
    result = app.handler({}, Context())
    assert json.loads(json.dumps(result)) == result
    assert (result["reaped"], result["dead_lettered"], result["open"]) == (1, 0, 1)
    assert result["undeliverable"] == 1 and result["complete"] is True
    output = capsys.readouterr().out
    metrics = [r for r in emf_records(output) if "Reaped" in r]
    assert metrics and metric_value(metrics[0], "Reaped") == 1
    assert metric_value(metrics[0], "OldestOpenRecordAge") >= 0
    assert metrics[0]["service"] == os.environ["POWERTOOLS_SERVICE_NAME"]  # the dimension
    per_consumer = [r for r in emf_records(output) if r.get("consumer") == CONSUMER]
    assert per_consumer and metric_value(per_consumer[0], "OpenRecords") == 1
    stuck = get_record(tables.client, tables.inbox, CONSUMER, "stuck")
    assert stuck is not None and stuck.status is Status.FAILED and not stuck.dead_lettered_at
