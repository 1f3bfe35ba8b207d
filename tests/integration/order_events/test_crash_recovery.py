"""Crashes around the commit, and a commit whose response is lost (DynamoDB Local).

The Lambda dying is simulated by raising from a botocore hook on the consumer's own client, just
before `TransactWriteItems` is sent or just after DynamoDB committed it; the invocation raises, as
a crashed invocation would, and SQS redelivers the batch to a fresh container.
"""

from __future__ import annotations

from typing import Any

import pytest

from devkit.app_state import ORDER_EVENTS, AppState
from devkit.events import delivered_again, sqs_event, sqs_record
from devkit.handlers import load_function, process
from devkit.meters import RequestMeter
from devkit.payloads import order
from lambda_inbox import Outcome
from lambda_inbox_tools.testing.faults import (
    LambdaCrashed,
    crash_on,
    lose_first_response,
    stale_batch_reads,
)

pytestmark = pytest.mark.integration

STOCK = {"SKU-RED-MUG": 100, "SKU-BLUE-CAP": 100, "SKU-GREEN-PEN": 100}


def _batch() -> list[dict[str, Any]]:
    """evt-1 and evt-2 share SKU-RED-MUG, so they commit in two transactions: evt-1 with evt-3
    first, evt-2 after them."""
    return [
        sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 2, "SKU-BLUE-CAP": 1})),
        sqs_record(order("evt-2", "ord-2", {"SKU-RED-MUG": 1})),
        sqs_record(order("evt-3", "ord-3", {"SKU-GREEN-PEN": 5})),
    ]


def _assert_effects_once(env: AppState) -> None:
    assert env.stock("SKU-RED-MUG") == (97, 3)
    assert env.stock("SKU-BLUE-CAP") == (99, 1)
    assert env.stock("SKU-GREEN-PEN") == (95, 5)
    records = env.order_records()
    assert set(records) == {(f"ord-{n}", "SHIPMENT") for n in (1, 2, 3)}
    assert {item["event_id"] for item in records.values()} == {"evt-1", "evt-2", "evt-3"}
    inbox = env.inbox_records(ORDER_EVENTS)
    assert set(inbox) == {"evt-1", "evt-2", "evt-3"}
    assert {record["status"] for record in inbox.values()} == {"COMPLETED"}


def _crashed_delivery(env: AppState, hook: str) -> list[dict[str, Any]]:
    """Seed the stock and deliver `_batch()` to a container that dies in `hook` ("before-call"
    or "after-call") of its first transaction; returns the batch, for its redelivery."""
    env.seed_stock(STOCK)
    batch = _batch()
    crashing = load_function("order_events")
    crash_on(crashing.consumer.dynamodb, hook)
    with pytest.raises(LambdaCrashed):
        crashing.handler(sqs_event(*batch), None)
    return batch


def test_crash_before_the_transaction_then_redelivery_commits_once(
    aws: AppState,
) -> None:
    batch = _crashed_delivery(aws, "before-call")

    # Nothing reached DynamoDB: no stock moved, no order, no inbox record.
    assert aws.stock("SKU-RED-MUG") == (100, 0)
    assert aws.order_records() == {}
    assert aws.inbox_records(ORDER_EVENTS) == {}

    fresh = load_function("order_events")
    results = process(fresh.consumer, sqs_event(*(delivered_again(r) for r in batch)))
    assert [result.outcome for result in results] == [Outcome.COMMITTED] * 3
    # And any later redelivery is a duplicate.
    again = process(fresh.consumer, sqs_event(*(delivered_again(r) for r in batch)))
    assert [result.outcome for result in again] == [Outcome.DUPLICATE] * 3
    _assert_effects_once(aws)
    aws.assert_dlq_empty()


def test_crash_after_the_transaction_committed_then_redelivery_is_a_duplicate(
    aws: AppState,
) -> None:
    batch = _crashed_delivery(aws, "after-call")

    # DynamoDB committed the first transaction (evt-1 and evt-3) before the crash; evt-2's
    # transaction was never sent.
    assert aws.stock("SKU-RED-MUG") == (98, 2)
    assert aws.stock("SKU-GREEN-PEN") == (95, 5)
    assert set(aws.order_records()) == {("ord-1", "SHIPMENT"), ("ord-3", "SHIPMENT")}
    assert set(aws.inbox_records(ORDER_EVENTS)) == {"evt-1", "evt-3"}

    fresh = load_function("order_events")
    meter = RequestMeter(fresh.consumer.dynamodb)
    redelivered = [delivered_again(r) for r in batch]
    results = process(fresh.consumer, sqs_event(*redelivered))
    assert [result.outcome for result in results] == [
        Outcome.DUPLICATE,
        Outcome.COMMITTED,
        Outcome.DUPLICATE,
    ]
    assert len(meter.transactions) == 1  # evt-2 alone: the duplicates cost no write
    assert fresh.handler(sqs_event(*redelivered), None) == {"batchItemFailures": []}
    assert len(meter.transactions) == 1
    _assert_effects_once(aws)
    aws.assert_dlq_empty()


def test_crash_after_commit_then_redelivery_racing_the_inbox_read_is_a_duplicate(
    aws: AppState,
) -> None:
    """The redelivery's transaction itself meets the committed inbox record (the cheap read
    missed it, e.g. an eventually consistent read): classified DUPLICATE, effects once."""
    batch = _crashed_delivery(aws, "after-call")
    assert set(aws.inbox_records(ORDER_EVENTS)) == {"evt-1", "evt-3"}

    fresh = load_function("order_events")
    stale_batch_reads(fresh.consumer.dynamodb)
    meter = RequestMeter(fresh.consumer.dynamodb)
    results = process(fresh.consumer, sqs_event(*(delivered_again(r) for r in batch)))
    assert [result.outcome for result in results] == [
        Outcome.DUPLICATE,
        Outcome.COMMITTED,
        Outcome.DUPLICATE,
    ]
    # evt-1 and evt-3 were found by the inbox condition of a transaction, not by the read.
    assert meter.transactions[0]["TransactItems"][0]["Put"]["Item"]["message_key"] == {"S": "evt-1"}
    _assert_effects_once(aws)
    aws.assert_dlq_empty()


def test_lost_commit_response_is_resent_with_the_same_token_and_counts_as_committed(
    aws: AppState,
) -> None:
    aws.seed_stock(STOCK)
    batch = _batch()
    module = load_function("order_events")
    meter = RequestMeter(module.consumer.dynamodb)
    # DynamoDB commits the first transaction; the client never hears about it.
    lost = lose_first_response(module.consumer.dynamodb)
    results = process(module.consumer, sqs_event(*batch))

    assert lost == [200]  # the first call really did commit on DynamoDB Local
    # evt-1 + evt-3 (response lost), the same request again, then evt-2.
    assert len(meter.transactions) == 3
    assert meter.tokens[0] == meter.tokens[1]
    assert meter.transactions[0] == meter.transactions[1]  # the very same request
    assert meter.tokens[2] != meter.tokens[0]
    # DynamoDB answered the resend with success (same token): committed, not a duplicate.
    assert [result.outcome for result in results] == [Outcome.COMMITTED] * 3
    _assert_effects_once(aws)
    aws.assert_dlq_empty()

    # A later redelivery builds a new request (new token) and meets the inbox record.
    again = process(module.consumer, sqs_event(*(delivered_again(r) for r in batch)))
    assert [result.outcome for result in again] == [Outcome.DUPLICATE] * 3
    _assert_effects_once(aws)
