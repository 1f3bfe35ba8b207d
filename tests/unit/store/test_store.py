"""InboxStore on moto: the dedupe read, the inbox put condition, FAILED records."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import inbound_message
from devkit.meters import RequestMeter
from lambda_inbox import InboxConfig, Retention
from lambda_inbox.store import (
    OPEN_INDEX_SHARDS,
    InboxRecord,
    InboxStore,
    Status,
    open_index_shard,
    open_records,
)
from lambda_inbox.store._inbox import result_text
from lambda_inbox.store._record import utc_iso

CONSUMER = "store-test"


@pytest.fixture
def store(aws: AppState) -> InboxStore:
    return InboxStore.from_config(
        aws.dynamodb, InboxConfig(consumer=CONSUMER, inbox_table=aws.inbox)
    )


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
    put_record(aws, "failed", status="FAILED")  # a FAILED record written before they expired
    records = store.fetch(["live", "edge", "expired", "failed", "absent"], now=now)
    assert set(records) == {"live", "edge", "failed"}
    assert records["live"] == InboxRecord(CONSUMER, "live", Status.COMPLETED, "fp-live", now + 60)
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
    config = InboxConfig(CONSUMER, aws.inbox, retention=Retention(completed=timedelta(hours=1)))
    put = InboxStore.from_config(aws.dynamodb, config).completion_put(
        inbound_message(), "k", "fp", {}, now=100
    )
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


def test_mark_failed_writes_an_open_record_that_expires_after_the_failed_retention(
    aws: AppState, store: InboxStore
) -> None:
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
    assert item["expires_at"] == {"N": str(int(1_700_000_000.25 + 14 * 86_400))}
    assert item["status"] == {"S": "FAILED"}
    assert item["error_code"] == {"S": "invalid_payload"}
    assert item["last_error"] == {"S": "bad"}
    assert item["delivery_id"] == {"S": "mid-1"}
    assert item["payload_snapshot"] == {"B": body}
    assert item["payload_truncated"] == {"BOOL": False}
    shard = open_index_shard(f"{CONSUMER}#e1")
    assert item["gsi_open_pk"] == {"S": f"FAILED#{shard:02d}"}
    assert item["gsi_open_sk"] == {"S": "2023-11-14T22:13:20.250+00:00"}
    assert item["dead_lettered_at"] == {"S": "2023-11-14T22:13:20.250+00:00"}
    # The sparse open-records index finds it, through every shard, with the whole record.
    found = list(open_records(aws.dynamodb, aws.inbox, consumer=CONSUMER))
    assert [record.message_key for record in found] == ["e1"]
    assert found[0] == InboxRecord.from_item(item)
    assert found[0].payload_snapshot == body


def test_open_records_spread_over_the_shards_and_come_back_newest_first(
    aws: AppState, store: InboxStore
) -> None:
    keys = [f"poison-{index}" for index in range(40)]
    for index, key in enumerate(keys):
        store.mark_failed(
            inbound_message(b"x"), key, "fp", error_code="c", error="e", now=1000 + index
        )
    items = [aws.inbox_record(CONSUMER, key) for key in keys]
    shards = {item["gsi_open_pk"]["S"] for item in items if item is not None}
    assert len(shards) > OPEN_INDEX_SHARDS // 2  # a storm does not heat one index partition
    found = [record.message_key for record in open_records(aws.dynamodb, aws.inbox)]
    assert found == list(reversed(keys))
    assert list(open_records(aws.dynamodb, aws.inbox, consumer="another")) == []


def test_record_maps_to_an_item_and_back_for_every_status() -> None:
    for record in (
        InboxRecord("c", "k1", Status.COMPLETED, "fp", 123, source="s", result='{"a": 1}'),
        InboxRecord(
            "c",
            "k2",
            Status.IN_PROGRESS,
            "fp",
            attempts=2,
            lease_expires_at=10.5,
            owner="o",
            open_since="2026-01-01T00:00:00.000+00:00",
        ),
        InboxRecord(
            "c",
            "k3",
            Status.FAILED,
            "fp",
            payload_snapshot=b"\xff",
            payload_truncated=True,
            error_code="x",
            last_error="y",
            open_since="2026-01-01T00:00:00.000+00:00",
        ),
    ):
        item = record.to_item()
        assert InboxRecord.from_item(item) == record
        assert ("gsi_open_pk" in item) is record.status.is_open


@pytest.mark.parametrize("result", [{}, {"outcome": "reserved"}])
@pytest.mark.parametrize("source", ["", "arn:aws:sqs:us-east-1:123456789012:orders"])
def test_the_completion_puts_item_is_the_completed_records_item(
    result: dict[str, str], source: str
) -> None:
    """The item of `completion_put`, built directly, is what `InboxRecord.to_item` makes for the
    COMPLETED record, attribute for attribute and in the same order; the puts of one time share
    its values of that time, and a put of another time has its own."""
    store = InboxStore(None, table="inbox", consumer="orders", retention_seconds=3600)  # type: ignore[arg-type]
    now = 1_795_000_000.25
    message = inbound_message(source=source)
    put = store.completion_put(message, "evt-1", "f" * 64, result, now=now)["Put"]
    record = InboxRecord(
        "orders",
        "evt-1",
        Status.COMPLETED,
        fingerprint="f" * 64,
        source=source,
        completed_at=utc_iso(now),
        expires_at=int(now + 3600),
        result=result_text(result) if result else None,
    )
    assert put["Item"] == record.to_item()
    assert list(put["Item"]) == list(record.to_item())
    other = store.completion_put(message, "evt-2", "e" * 64, result, now=now)["Put"]["Item"]
    later = store.completion_put(message, "evt-3", "e" * 64, result, now=now + 1)["Put"]["Item"]
    assert other["completed_at"] is put["Item"]["completed_at"]
    assert later["expires_at"] == {"N": str(int(now + 1 + 3600))}
    assert put["Item"]["expires_at"] == {"N": str(int(now + 3600))}  # not changed by `later`


def test_mark_failed_truncates_the_snapshot_and_handles_empty_bodies(aws: AppState) -> None:
    config = InboxConfig(CONSUMER, aws.inbox, retention=Retention(snapshot_bytes=4))
    store = InboxStore.from_config(aws.dynamodb, config)
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
    assert item["expires_at"] == {"N": str(int(now + 14 * 86_400))}  # the failed retention


def test_open_records_are_bounded_by_since_and_until(aws: AppState, store: InboxStore) -> None:
    for index in range(5):
        store.mark_failed(
            inbound_message(b"x"), f"k{index}", "fp", error_code="c", error="e", now=index
        )
    times = [f"1970-01-01T00:00:0{index}.000+00:00" for index in range(5)]

    def keys(since: str | None = None, until: str | None = None) -> list[str]:
        found = open_records(aws.dynamodb, aws.inbox, since=since, until=until)
        return [record.message_key for record in found]

    assert keys(since=times[3]) == ["k4", "k3"]
    assert keys(until=times[1]) == ["k1", "k0"]
    assert keys(since=times[1], until=times[2]) == ["k2", "k1"]


@pytest.mark.parametrize(
    "result",
    [
        {"outcome": "reserved"},
        {"outcome": 'ключ \u2028 "quoted"'},
        {"outcome": 3},
        {"outcome": "rejected", "skus": ["b", "a"]},
        {"when": datetime(2026, 1, 2, tzinfo=UTC)},
    ],
)
def test_a_result_is_stored_as_its_sorted_json(result: dict[str, Any]) -> None:
    """`result_text` is the JSON of the result, keys sorted, other values as text."""
    assert result_text(result) == json.dumps(result, sort_keys=True, default=str)


def test_each_completion_put_carries_its_own_time_and_owner(store: InboxStore) -> None:
    """The time fields and the claim are made once per time and shared by the puts of that
    time; a put at another time, or in leased mode, gets its own."""
    message = inbound_message("{}")

    def put(now: float, owner: str | None = None) -> dict[str, Any]:
        made: dict[str, Any] = store.completion_put(
            message, "k", "fp", {}, now=now, lease_owner=owner
        )["Put"]
        return made

    first, same, later = put(1000.5), put(1000.5), put(2000.25)
    assert first == same
    assert later["Item"]["completed_at"] == {"S": "1970-01-01T00:33:20.250+00:00"}
    assert later["Item"]["expires_at"] == {"N": str(2000 + 7 * 24 * 3600)}
    assert later["ExpressionAttributeValues"][":now"] == {"N": "2000"}
    assert first["ExpressionAttributeValues"][":now"] == {"N": "1000"}
    leased = put(2000.25, owner="owner-1")
    assert leased["ConditionExpression"] == "#status = :in_progress AND #owner = :owner"
    assert leased["ExpressionAttributeValues"][":owner"] == {"S": "owner-1"}
    assert put(2000.25)["ConditionExpression"] == later["ConditionExpression"]


def test_a_lease_expiring_at_now_gets_one_verdict_everywhere(aws: AppState) -> None:
    """The claim, the reaper and the command line read a lease through one rule: held at the
    instant it expires, over a moment later."""
    from lambda_inbox.store import attention_records
    from lambda_inbox.store._leases import ClaimState, LeaseWrites
    from lambda_inbox_tools.cli.records import summarize_open

    leases = LeaseWrites(aws.dynamodb, table=aws.inbox, consumer=CONSUMER, lease_seconds=60)
    claimed_at = 1_700_000_000.0
    message = inbound_message(b'{"id": 1}')
    assert leases.claim(message, "edge", "fp", now=claimed_at).state is ClaimState.CLAIMED
    expiry = claimed_at + 60
    for now, expired in ((expiry, False), (expiry + 0.001, True)):
        [record] = open_records(aws.dynamodb, aws.inbox)
        assert record.lease_expired(now) is expired
        assert record.needs_attention(now) is expired
        assert record.lease_expired(now + 1, grace=1.0) is expired  # the reaper's grace
        counts = summarize_open(aws.dynamodb, aws.inbox, now=now).consumers[CONSUMER]
        assert counts.lease_expired == int(expired)
        attention = list(attention_records(aws.dynamodb, aws.inbox, now=now))
        assert [r.message_key for r in attention] == (["edge"] if expired else [])
        state = leases.claim(message, "edge", "fp", now=now).state
        assert state is (ClaimState.CLAIMED if expired else ClaimState.HELD)


def test_unprocessed_keys_wait_the_retry_policys_backoff_and_stop_at_the_deadline() -> None:
    """The batch read's rounds wait `RetryPolicy.backoff` (jittered, capped), through `pause`,
    and stop as soon as `pause` says the deadline leaves no room."""
    from lambda_inbox import RetryPolicy

    class Unprocessing:
        calls = 0

        def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
            self.calls += 1
            return {"Responses": {}, "UnprocessedKeys": RequestItems}

    client = Unprocessing()
    retry = RetryPolicy(base_delay=0.01, max_delay=0.02)
    store = InboxStore(client, table="t", consumer="c", retention_seconds=60, retry=retry)  # type: ignore[arg-type]
    waits: list[float] = []

    def pause(seconds: float) -> bool:
        waits.append(seconds)
        return True

    assert store.fetch(["k"], now=0, pause=pause) == {}
    assert client.calls == len(waits) + 1 and len(waits) >= 2
    assert all(0 <= wait <= 0.02 for wait in waits)
    client.calls = 0
    assert store.fetch(["k"], now=0, pause=lambda s: False) == {}
    assert client.calls == 1
