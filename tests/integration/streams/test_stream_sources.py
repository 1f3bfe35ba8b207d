"""Kinesis Data Streams and DynamoDB Streams through `InboxConsumer.handle` on DynamoDB Local:
each record's effects commit once through duplicates, a redelivery from the reported sequence
number, poison and crashes; the shard keeps its order."""

from __future__ import annotations

import base64
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel, Field

from devkit.app_state import AppState
from devkit.events import replayed
from devkit.meters import RequestMeter
from lambda_inbox import InboxConsumer, UnitOfWork
from lambda_inbox.wire import parse_kinesis_event
from lambda_inbox_tools.testing import (
    deliver_until_acknowledged,
    dynamodb_stream_event,
    dynamodb_stream_record,
    event_after,
    failed_sequence_numbers,
    kinesis_event,
    kinesis_record,
)
from lambda_inbox_tools.testing.faults import LambdaCrashed, crash_on
from lambda_inbox_tools.testing.stream_events import sequence_number

pytestmark = pytest.mark.integration


class Deposit(BaseModel):
    event_id: str = Field(min_length=1)
    account: str = Field(min_length=1)
    amount: int = Field(gt=0)


def ledger(aws: AppState, *, fail_on: set[str] | None = None) -> InboxConsumer[Deposit]:
    """A Kinesis consumer: each deposit adds to its account's balance and leaves an entry.
    `fail_on`: event ids whose first decision raises (a transient handler failure)."""
    failing = set(fail_on or ())

    def deposit(event: Deposit, uow: UnitOfWork) -> None:
        if event.event_id in failing:
            failing.discard(event.event_id)
            raise RuntimeError(f"downstream hiccup on {event.event_id}")
        uow.update(
            aws.domain,
            {"pk": f"ACCOUNT#{event.account}", "sk": "BALANCE"},
            "ADD balance :amount, deposits :one",
            values={":amount": event.amount, ":one": 1},
        )
        uow.put(
            aws.domain,
            {"pk": f"ACCOUNT#{event.account}", "sk": f"ENTRY#{event.event_id}", "amount": 1},
            condition="attribute_not_exists(pk)",
        )

    return aws.consumer("ledger", model=Deposit, decide=deposit, key="event_id")


def deposit(n: int, account: str, amount: int) -> dict[str, Any]:
    return {"event_id": f"dep-{n}", "account": account, "amount": amount}


def balances(aws: AppState) -> dict[str, tuple[int, int]]:
    return {
        item["pk"].removeprefix("ACCOUNT#"): (int(item["balance"]), int(item["deposits"]))
        for item in aws.domain_items()
        if item["sk"] == "BALANCE"
    }


def test_a_kinesis_batch_commits_once_and_its_redelivery_reads_once(aws: AppState) -> None:
    consumer = ledger(aws)
    meter = RequestMeter(consumer.dynamodb)
    event = kinesis_event(
        kinesis_record(n, deposit(n, f"a{n % 3}", 10 + n), partition_key=f"a{n % 3}")
        for n in range(10)
    )
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    assert meter.operations() == ["TransactWriteItems"]  # new sequence numbers: no read
    meter.clear()
    # The same batch again (a timeout of the whole invocation): one read, nothing written.
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    assert meter.operations() == ["BatchGetItem"]
    assert balances(aws) == {
        "a0": (10 + 13 + 16 + 19, 4),
        "a1": (11 + 14 + 17, 3),
        "a2": (12 + 15 + 18, 3),
    }
    assert set(aws.inbox_statuses().values()) == {"COMPLETED"}


def test_a_producer_retry_at_a_new_sequence_number_is_a_duplicate(aws: AppState) -> None:
    consumer = ledger(aws)
    original = deposit(1, "a", 50)
    first = kinesis_event([kinesis_record(0, original), kinesis_record(1, deposit(2, "a", 5))])
    retry = kinesis_event([kinesis_record(2, original), kinesis_record(3, deposit(3, "b", 7))])
    assert consumer.handle(first, None) == {"batchItemFailures": []}
    results = consumer.process(parse_kinesis_event(retry))
    assert [r.outcome.value for r in results] == ["duplicate", "committed"]
    assert balances(aws) == {"a": (55, 2), "b": (7, 1)}


def test_a_failure_stops_the_shard_and_is_retried_from_its_sequence_number(
    aws: AppState,
) -> None:
    consumer = ledger(aws, fail_on={"dep-3"})
    event = kinesis_event(kinesis_record(n, deposit(n, "a", 1 + n)) for n in range(8))
    response = consumer.handle(event, None)
    # Every record on the account is ordered after dep-3: it and all later ones come back.
    assert failed_sequence_numbers(response) == [sequence_number(3)]
    assert balances(aws) == {"a": (1 + 2 + 3, 3)}
    again = event_after(event, response)
    assert again is not None and len(again["Records"]) == 5
    assert consumer.handle(again, None) == {"batchItemFailures": []}
    assert balances(aws) == {"a": (sum(1 + n for n in range(8)), 8)}


def test_poison_is_dead_lettered_with_its_bytes_and_coordinates_and_the_shard_goes_on(
    aws: AppState,
) -> None:
    consumer = ledger(aws)
    records = [kinesis_record(n, deposit(n, "a", 10)) for n in range(5)]
    records[1] = kinesis_record(1, b"\xffnot json", partition_key="p-1")
    records[3] = kinesis_record(3, {"event_id": "dep-3", "account": "a", "amount": -5})
    records[3]["kinesis"]["partitionKey"] = "p-3"
    event = kinesis_event(records)
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    assert balances(aws) == {"a": (30, 3)}
    dead = sorted(
        aws.dead_letters(),
        key=lambda m: m["MessageAttributes"]["kinesis-sequence-number"]["StringValue"],
    )
    assert len(dead) == 2
    attributes = [
        {k: v.get("StringValue", "") for k, v in m["MessageAttributes"].items()} for m in dead
    ]
    assert [a["kinesis-sequence-number"] for a in attributes] == [
        sequence_number(1),
        sequence_number(3),
    ]
    assert [a["kinesis-partition-key"] for a in attributes] == ["p-1", "p-3"]
    assert {a["kinesis-shard-id"] for a in attributes} == {"shardId-000000000000"}
    assert [a["inbox-error-code"] for a in attributes] == ["undecodable_body", "invalid_payload"]
    # The original bytes, whatever they are (what is not text travels as base64).
    sent = [replayed(m).body for m in dead]
    assert sent == [base64.b64decode(records[n]["kinesis"]["data"]) for n in (1, 3)]
    # Delivered again (the whole batch, after a crash): nothing commits twice; the poison is
    # dead-lettered again under the same keys (dead letters are at least once, as for SQS).
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    assert balances(aws) == {"a": (30, 3)}
    again = aws.dead_letters()
    assert sorted(m["MessageAttributes"]["inbox-message-key"]["StringValue"] for m in again) == (
        sorted(m["MessageAttributes"]["inbox-message-key"]["StringValue"] for m in dead)
    )


def test_a_crash_after_the_commit_is_retried_whole_without_double_effects(
    aws: AppState,
) -> None:
    consumer = ledger(aws)
    crash_on(consumer.dynamodb, "after-call")
    event = kinesis_event(kinesis_record(n, deposit(n, f"a{n % 2}", 100)) for n in range(6))
    with pytest.raises(LambdaCrashed):
        consumer.handle(event, None)
    # Lambda retries the whole batch (a function error), here in a new execution environment.
    fresh = ledger(aws)
    assert deliver_until_acknowledged(lambda e, c: fresh.handle(e, c), event) == 1
    assert balances(aws) == {"a0": (300, 3), "a1": (300, 3)}


# ---- DynamoDB Streams: a projection of orders by status --------------------------------------


class OrderChange(BaseModel):
    """A stream record's document, in the record's own names."""

    eventName: str
    Keys: dict[str, Any]
    NewImage: dict[str, Any] | None = None
    OldImage: dict[str, Any] | None = None


def projection(aws: AppState) -> InboxConsumer[OrderChange]:
    """Orders per status, kept from the orders table's stream: a change moves one count."""

    def project(change: OrderChange, uow: UnitOfWork) -> None:
        moves: dict[str, int] = {}
        if change.OldImage is not None:
            moves[change.OldImage["status"]] = moves.get(change.OldImage["status"], 0) - 1
        if change.NewImage is not None:
            moves[change.NewImage["status"]] = moves.get(change.NewImage["status"], 0) + 1
        for status, delta in moves.items():
            if delta:
                uow.update(
                    aws.domain,
                    {"pk": "ORDERS_BY_STATUS", "sk": status},
                    "ADD orders :delta",
                    values={":delta": delta},
                )

    return aws.consumer("orders-by-status", model=OrderChange, decide=project)


def by_status(aws: AppState) -> dict[str, int]:
    return {
        item["sk"]: int(item["orders"])
        for item in aws.domain_items()
        if item["pk"] == "ORDERS_BY_STATUS" and item["orders"]
    }


def order_changes() -> list[dict[str, Any]]:
    history: list[tuple[str, str | None, str | None]] = [
        ("o1", None, "PLACED"),
        ("o2", None, "PLACED"),
        ("o1", "PLACED", "PAID"),
        ("o3", None, "PLACED"),
        ("o1", "PAID", "SHIPPED"),
        ("o2", "PLACED", None),  # cancelled: the item is deleted
    ]
    return [
        dynamodb_stream_record(
            n,
            {"pk": order, "total": Decimal("12.50")},
            old_image={"pk": order, "status": old} if old else None,
            new_image={"pk": order, "status": new, "tags": {"a", "b"}} if new else None,
        )
        for n, (order, old, new) in enumerate(history)
    ]


def test_a_dynamodb_stream_projection_counts_each_change_once(aws: AppState) -> None:
    consumer = projection(aws)
    event = dynamodb_stream_event(order_changes())
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    assert by_status(aws) == {"PLACED": 1, "SHIPPED": 1}
    assert consumer.handle(event, None) == {"batchItemFailures": []}  # redelivered
    assert projection(aws).handle(event, None) == {"batchItemFailures": []}  # elsewhere
    assert by_status(aws) == {"PLACED": 1, "SHIPPED": 1}


def test_an_unreadable_stream_record_is_dead_lettered_as_delivered(aws: AppState) -> None:
    consumer = projection(aws)
    records = order_changes()[:3]
    records[1]["dynamodb"]["NewImage"] = {"status": {"Q": "?"}}  # not DynamoDB JSON
    assert consumer.handle(dynamodb_stream_event(records), None) == {"batchItemFailures": []}
    assert by_status(aws) == {"PAID": 1}
    (dead,) = aws.dead_letters()
    attributes = {k: v.get("StringValue") for k, v in dead["MessageAttributes"].items()}
    assert attributes["dynamodb-sequence-number"] == sequence_number(1)
    assert attributes["dynamodb-stream-event-id"] == records[1]["eventID"]
    assert attributes["inbox-error-code"] == "malformed_json"
    assert '"Q":"?"' in dead["Body"]  # the stream record's JSON
