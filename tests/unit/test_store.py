"""InboxStore on moto: the dedupe read, the inbox put condition, FAILED records."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import inbound_message
from devkit.meters import RequestMeter
from lambda_inbox import InboxConfig
from lambda_inbox.store import InboxRecord, InboxStore, Status

CONSUMER = "store-test"


@pytest.fixture
def store(aws: AppState) -> InboxStore:
    return InboxStore(aws.dynamodb, InboxConfig(consumer=CONSUMER, inbox_table=aws.inbox))


def put_record(aws: AppState, key: str, status: str = "COMPLETED", **extra: Any) -> None:
    item: dict[str, Any] = {
        "pk": {"S": f"{CONSUMER}#{key}"},
        "message_key": {"S": key},
        "status": {"S": status},
        "fingerprint": {"S": f"fp-{key}"},
    }
    for name, value in extra.items():
        item[name] = {"N": str(value)} if isinstance(value, int) else {"S": value}
    aws.dynamodb.put_item(TableName=aws.inbox, Item=item)


def test_fetch_returns_live_records_and_skips_expired_ones(
    aws: AppState, store: InboxStore
) -> None:
    now = int(time.time())
    put_record(aws, "live", expires_at=now + 60)
    put_record(aws, "edge", expires_at=now)  # expires_at == now is still live
    put_record(aws, "expired", expires_at=now - 1)
    put_record(aws, "failed", status="FAILED")  # FAILED records carry no expires_at
    records = store.fetch(["live", "edge", "expired", "failed", "absent"], now=now)
    assert set(records) == {"live", "edge", "failed"}
    assert records["live"] == InboxRecord("live", Status.COMPLETED, "fp-live", now + 60)
    assert records["failed"].status is Status.FAILED
    assert records["failed"].expires_at is None


def test_fetch_of_no_keys_makes_no_request(aws: AppState, store: InboxStore) -> None:
    meter = RequestMeter(aws.dynamodb)
    assert store.fetch([], now=0) == {}
    assert meter.operations() == []


def test_fetch_handles_more_than_100_keys_in_several_calls(
    aws: AppState, store: InboxStore
) -> None:
    now = int(time.time())
    keys = [f"k{index:03d}" for index in range(250)]
    for key in keys[::2]:
        put_record(aws, key, expires_at=now + 60)
    meter = RequestMeter(aws.dynamodb)
    records = store.fetch([*keys, *keys[:10]], now=now)  # repeated keys are read once
    reads = meter.bodies("BatchGetItem")
    assert [len(read["RequestItems"][aws.inbox]["Keys"]) for read in reads] == [100, 100, 50]
    assert set(records) == set(keys[::2])


def test_completion_put_shape(aws: AppState, store: InboxStore) -> None:
    put = store.completion_put(inbound_message("{}"), "k1", "fp", {"outcome": "ok"}, now=1000.5)[
        "Put"
    ]
    assert put["TableName"] == aws.inbox
    assert put["Item"]["pk"] == {"S": f"{CONSUMER}#k1"}
    assert put["Item"]["status"] == {"S": "COMPLETED"}
    assert put["Item"]["expires_at"] == {"N": str(1000 + 7 * 24 * 3600)}
    assert put["Item"]["result"] == {"S": '{"outcome": "ok"}'}
    assert put["ConditionExpression"] == (
        "attribute_not_exists(pk) OR expires_at < :now OR #status = :failed"
    )
    assert put["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
    assert (
        "result"
        not in store.completion_put(inbound_message("{}"), "k", "fp", {}, now=1)["Put"]["Item"]
    )


def test_retention_sets_expires_at(aws: AppState) -> None:
    config = InboxConfig(consumer=CONSUMER, inbox_table=aws.inbox, retention=timedelta(hours=1))
    put = InboxStore(aws.dynamodb, config).completion_put(inbound_message(), "k", "fp", {}, now=100)
    assert put["Put"]["Item"]["expires_at"] == {"N": str(100 + 3600)}


def test_completion_put_is_refused_over_a_live_completed_record(
    aws: AppState, store: InboxStore
) -> None:
    now = time.time()
    put_record(aws, "done", expires_at=int(now) + 60)
    put_record(aws, "old", expires_at=int(now) - 60)
    put_record(aws, "broken", status="FAILED")
    for key, accepted in (("done", False), ("old", True), ("broken", True), ("new", True)):
        request = store.completion_put(inbound_message(), key, "fp-new", {}, now=now)["Put"]
        try:
            aws.dynamodb.put_item(**request)
        except aws.dynamodb.exceptions.ConditionalCheckFailedException:
            assert not accepted, key
        else:
            assert accepted, key
    assert aws.inbox_record(CONSUMER, "done")["fingerprint"] == {  # type: ignore[index]
        "S": "fp-done"
    }


def test_mark_failed_writes_an_open_record_without_ttl(aws: AppState, store: InboxStore) -> None:
    body = b'{"event_id": "e1"}'
    assert store.mark_failed(
        inbound_message(body, delivery_id="mid-1"),
        "e1",
        "fp1",
        error_code="invalid_payload",
        error="bad",
        now=1_700_000_000.25,
    )
    item = aws.inbox_record(CONSUMER, "e1")
    assert item is not None
    assert "expires_at" not in item
    assert item["status"] == {"S": "FAILED"}
    assert item["error_code"] == {"S": "invalid_payload"}
    assert item["last_error"] == {"S": "bad"}
    assert item["delivery_id"] == {"S": "mid-1"}
    assert item["payload_snapshot"] == {"B": body}
    assert item["payload_truncated"] == {"BOOL": False}
    assert item["gsi_open_pk"] == {"S": f"{CONSUMER}#FAILED"}
    assert item["gsi_open_sk"] == {"S": "2023-11-14T22:13:20.250+00:00"}
    # The sparse open-records index finds it.
    found = aws.dynamodb.query(
        TableName=aws.inbox,
        IndexName="open-records",
        KeyConditionExpression="gsi_open_pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"{CONSUMER}#FAILED"}},
    )["Items"]
    assert [entry["message_key"] for entry in found] == [{"S": "e1"}]


def test_mark_failed_truncates_the_snapshot_and_handles_empty_bodies(aws: AppState) -> None:
    config = InboxConfig(consumer=CONSUMER, inbox_table=aws.inbox, failed_payload_snapshot_bytes=4)
    store = InboxStore(aws.dynamodb, config)
    store.mark_failed(inbound_message(b"0123456789"), "long", "fp", error_code="c", error="", now=1)
    store.mark_failed(inbound_message(b""), "empty", "fp", error_code="c", error="e", now=1)
    long = aws.inbox_record(CONSUMER, "long")
    empty = aws.inbox_record(CONSUMER, "empty")
    assert long is not None and empty is not None
    assert long["payload_snapshot"] == {"B": b"0123"}
    assert long["payload_truncated"] == {"BOOL": True}
    assert long["last_error"] == {"S": "c"}  # empty error text falls back to the code
    assert empty["payload_snapshot"] == {"NULL": True}


def test_mark_failed_never_overwrites_a_live_completed_record(
    aws: AppState, store: InboxStore
) -> None:
    now = time.time()
    put_record(aws, "done", expires_at=int(now) + 60)
    assert not store.mark_failed(
        inbound_message(), "done", "fp-x", error_code="c", error="e", now=now
    )
    item = aws.inbox_record(CONSUMER, "done")
    assert item is not None
    assert item["status"] == {"S": "COMPLETED"}
    assert item["fingerprint"] == {"S": "fp-done"}


@pytest.mark.parametrize("existing", ["failed", "expired"])
def test_mark_failed_overwrites_failed_and_expired_records(
    aws: AppState, store: InboxStore, existing: str
) -> None:
    now = time.time()
    if existing == "failed":
        put_record(aws, "k", status="FAILED", error_code="old")
    else:
        put_record(aws, "k", expires_at=int(now) - 1)
    assert store.mark_failed(inbound_message(), "k", "fp-new", error_code="new", error="e", now=now)
    item = aws.inbox_record(CONSUMER, "k")
    assert item is not None
    assert item["status"] == {"S": "FAILED"}
    assert item["error_code"] == {"S": "new"}
    assert item["fingerprint"] == {"S": "fp-new"}
    assert "expires_at" not in item
