"""`lambda-inbox show`, `failed` and `stats` on DynamoDB Local, reading records written through
`InboxRecord.to_item()` (FAILED records spread over many shards of the open-records index,
IN_PROGRESS records with expired and live leases, COMPLETED records), with a dead-letter queue
on a moto server for `stats --queue`."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest

from devkit.tables import LocalTables
from lambda_inbox.store import InboxRecord, Status, open_index_shard, utc_iso
from tests.cli_support import Cli

pytestmark = pytest.mark.integration

ORDER_FAILURES = 20
BINARY_PAYLOAD = b"\x00\xff\xfe payment \x80"


@dataclass(frozen=True)
class Inbox:
    tables: LocalTables
    now: float
    records: dict[str, InboxRecord]

    @property
    def table(self) -> str:
        return self.tables.inbox

    @property
    def endpoint(self) -> str:
        return self.tables.endpoint


def _order_failure(n: int, now: float) -> InboxRecord:
    at = utc_iso(now - 60 * n - 30)
    return InboxRecord(
        consumer="order-events",
        message_key=f"evt-order-{n:04d}",
        status=Status.FAILED,
        fingerprint=f"fp-{n}",
        source="arn:aws:sqs:us-east-1:123456789012:lambda-inbox-order-events",
        delivery_id=f"msg-{n}",
        error_code="invalid_payload",
        last_error=f"lines.0.qty\n  Input should be a valid integer (record {n})",
        failed_at=at,
        dead_lettered_at=at,
        open_since=at,
        payload_snapshot=json.dumps({"event_id": f"evt-order-{n:04d}", "qty": "many"}).encode(),
    )


@pytest.fixture
def inbox(local_tables: LocalTables) -> Inbox:
    now = time.time()
    records = [_order_failure(n, now) for n in range(ORDER_FAILURES)]
    records += [
        InboxRecord(
            consumer="payment-events",
            message_key="payments-1-41",
            status=Status.FAILED,
            error_code="undecodable_body",
            last_error="not UTF-8",
            failed_at=utc_iso(now - 7200),
            open_since=utc_iso(now - 7200),
            payload_snapshot=BINARY_PAYLOAD,
            payload_truncated=True,
            source="payments-1-41",
        ),
        InboxRecord(
            consumer="payment-events",
            message_key="evt-pay-0007",
            status=Status.FAILED,
            error_code="rejected_by_handler",
            last_error="unsupported currency XYZ",
            failed_at=utc_iso(now - 3600),
            open_since=utc_iso(now - 3600),
            payload_snapshot=b"currency=XYZ",
        ),
        InboxRecord(
            consumer="customer-notifications",
            message_key="ntf-expired",
            status=Status.IN_PROGRESS,
            attempts=3,
            owner="worker-a",
            lease_expires_at=now - 300,
            open_since=utc_iso(now - 300),
        ),
        InboxRecord(
            consumer="customer-notifications",
            message_key="ntf-live",
            status=Status.IN_PROGRESS,
            attempts=1,
            owner="worker-b",
            lease_expires_at=now + 600,
            open_since=utc_iso(now + 600),
        ),
    ]
    records += [
        InboxRecord(
            consumer="order-events",
            message_key=f"evt-done-{n}",
            status=Status.COMPLETED,
            fingerprint="fp",
            completed_at=utc_iso(now - 10),
            expires_at=int(now + 86400),
            result=json.dumps({"outcome": "reserved"}),
        )
        for n in range(3)
    ]
    for record in records:
        local_tables.client.put_item(TableName=local_tables.inbox, Item=record.to_item())
    return Inbox(local_tables, now, {record.message_key: record for record in records})


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys)


def test_the_records_are_spread_over_the_index_shards(inbox: Inbox) -> None:
    shards = {open_index_shard(record.pk) for record in inbox.records.values()}
    assert len(shards) >= 6


def test_failed_lists_failed_records_and_expired_leases_newest_first(
    cli: Cli, inbox: Inbox
) -> None:
    run = cli("failed", "--table", inbox.table, "--endpoint-url", inbox.endpoint, "--json")

    assert run.code == 0, run.err
    document = run.json()
    keys = [record["message_key"] for record in document["records"]]
    assert set(keys) == {
        *(f"evt-order-{n:04d}" for n in range(ORDER_FAILURES)),
        "payments-1-41",
        "evt-pay-0007",
        "ntf-expired",
    }
    assert "ntf-live" not in keys and "evt-done-0" not in keys
    opened = [record["open_since"] for record in document["records"]]
    assert opened == sorted(opened, reverse=True)
    assert document["more"] is False
    expired = next(r for r in document["records"] if r["message_key"] == "ntf-expired")
    assert (expired["status"], expired["lease_expired"], expired["attempts"]) == (
        "IN_PROGRESS",
        True,
        3,
    )


def test_failed_filters_by_consumer_age_and_count(cli: Cli, inbox: Inbox) -> None:
    common = ("--table", inbox.table, "--endpoint-url", inbox.endpoint, "--json")

    limited = cli("failed", "--limit", "5", *common).json()
    assert [r["message_key"] for r in limited["records"]] == [
        f"evt-order-{n:04d}" for n in range(5)
    ]
    assert limited["more"] is True

    payments = cli("failed", "--consumer", "payment-events", *common).json()
    assert [r["message_key"] for r in payments["records"]] == ["evt-pay-0007", "payments-1-41"]

    recent = cli("failed", "--since", "10m", *common).json()
    assert {r["message_key"] for r in recent["records"]} == {
        *(f"evt-order-{n:04d}" for n in range(10)),
        "ntf-expired",
    }


def test_failed_prints_a_table(cli: Cli, inbox: Inbox) -> None:
    run = cli("failed", "--table", inbox.table, "--endpoint-url", inbox.endpoint, "--limit", "30")
    assert run.code == 0, run.err
    for text in (
        "evt-order-0000",
        "invalid_payload",
        "LEASE EXPIRED",
        "3 attempts",
        "payments-1-41",
    ):
        assert text in run.out
    assert f"{ORDER_FAILURES + 3} records" in run.out


def test_failed_reads_the_table_name_from_inbox_table(cli: Cli, inbox: Inbox) -> None:
    run = cli(
        "failed", "--consumer", "payment-events", "--endpoint-url", inbox.endpoint,
        INBOX_TABLE=inbox.table,
    )  # fmt: skip
    assert run.code == 0, run.err
    assert "evt-pay-0007" in run.out


def test_show_prints_a_failed_record_with_its_payload(cli: Cli, inbox: Inbox) -> None:
    args = ("--table", inbox.table, "--endpoint-url", inbox.endpoint)
    run = cli("show", "order-events", "evt-order-0003", *args)

    assert run.code == 0, run.err
    for text in (
        "FAILED",
        "invalid_payload",
        "Input should be a valid integer (record 3)",
        "fp-3",
        "lambda-inbox-order-events",
        "msg-3",
        '"qty": "many"',
        "stored payload (json",
    ):
        assert text in run.out

    document = cli("show", "order-events", "evt-order-0003", *args, "--json").json()
    assert document["status"] == "FAILED"
    assert document["payload"] == {
        "bytes": len(inbox.records["evt-order-0003"].payload_snapshot or b""),
        "truncated": False,
        "encoding": "json",
        "value": {"event_id": "evt-order-0003", "qty": "many"},
    }
    assert document["failed_at"] == inbox.records["evt-order-0003"].failed_at


def test_show_prints_binary_payloads_as_base64_and_text_as_text(cli: Cli, inbox: Inbox) -> None:
    args = ("--table", inbox.table, "--endpoint-url", inbox.endpoint, "--json")
    binary = cli("show", "payment-events", "payments-1-41", *args).json()["payload"]
    assert binary["encoding"] == "base64"
    assert binary["truncated"] is True
    assert base64.b64decode(binary["value"]) == BINARY_PAYLOAD
    text = cli("show", "payment-events", "evt-pay-0007", *args).json()["payload"]
    assert (text["encoding"], text["value"]) == ("text", "currency=XYZ")


def test_show_prints_leases_and_completed_records(cli: Cli, inbox: Inbox) -> None:
    args = ("--table", inbox.table, "--endpoint-url", inbox.endpoint)
    lease = cli("show", "customer-notifications", "ntf-live", *args, "--json").json()
    assert (lease["status"], lease["lease_expired"], lease["owner"]) == (
        "IN_PROGRESS",
        False,
        "worker-b",
    )
    expired = cli("show", "customer-notifications", "ntf-expired", *args)
    assert "LEASE EXPIRED" in expired.out and "worker-a" in expired.out
    done = cli("show", "order-events", "evt-done-1", *args, "--json").json()
    assert (done["status"], done["result"], done["payload"]) == (
        "COMPLETED",
        {"outcome": "reserved"},
        None,
    )


def test_show_of_a_missing_record_exits_1(cli: Cli, inbox: Inbox) -> None:
    run = cli(
        "show", "order-events", "evt-nope", "--table", inbox.table, "--endpoint-url", inbox.endpoint
    )
    assert run.code == 1
    assert "no record for consumer 'order-events' and key 'evt-nope'" in run.err


@pytest.fixture
def dead_letters(moto_server_endpoint: str) -> Iterator[str]:
    sqs = boto3.client("sqs", endpoint_url=moto_server_endpoint, region_name="us-east-1")
    name = f"order-events-dlq-{uuid.uuid4().hex[:10]}"
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    for n in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"poison-{n}")
    yield name
    sqs.delete_queue(QueueUrl=url)


def test_stats_counts_open_records_and_queue_depths(
    cli: Cli, inbox: Inbox, dead_letters: str, moto_server_endpoint: str
) -> None:
    # DynamoDB and SQS on different local endpoints: boto3's per-service variables.
    endpoints = {
        "AWS_ENDPOINT_URL_DYNAMODB": inbox.endpoint,
        "AWS_ENDPOINT_URL_SQS": moto_server_endpoint,
    }
    run = cli("stats", "--table", inbox.table, "--queue", dead_letters, "--json", **endpoints)

    assert run.code == 0, run.err
    document = run.json()
    assert document["open"] == {
        "customer-notifications": {"FAILED": 0, "IN_PROGRESS": 2, "lease_expired": 1},
        "order-events": {"FAILED": ORDER_FAILURES, "IN_PROGRESS": 0, "lease_expired": 0},
        "payment-events": {"FAILED": 2, "IN_PROGRESS": 0, "lease_expired": 0},
    }
    assert document["open_total"] == {
        "FAILED": ORDER_FAILURES + 2,
        "IN_PROGRESS": 2,
        "lease_expired": 1,
    }
    oldest = document["oldest_open"]
    assert (oldest["consumer"], oldest["message_key"]) == ("payment-events", "payments-1-41")
    assert oldest["age_seconds"] == pytest.approx(7200, abs=120)
    assert isinstance(document["items_approximate"], int)
    (queue,) = document["queues"]
    assert (queue["queue"], queue["visible"], queue["in_flight"]) == (dead_letters, 3, 0)

    text = cli("stats", "--table", inbox.table, "--queue", dead_letters, **endpoints)
    assert text.code == 0, text.err
    for part in ("order-events", "payment-events", "lease expired", dead_letters, "oldest open"):
        assert part in text.out

    only = cli("stats", "--table", inbox.table, "--consumer", "order-events", "--json", **endpoints)
    assert list(only.json()["open"]) == ["order-events"]
