"""Crashes around the commit, and a commit whose response is lost (DynamoDB Local).

The Lambda dying is simulated by raising from a botocore hook on the consumer's own client, just
before `TransactWriteItems` is sent or just after DynamoDB committed it; the invocation raises, as
a crashed invocation would, and SQS redelivers the batch to a fresh container.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError

from lambda_inbox import Outcome
from lambda_inbox.sqs import parse_sqs_event
from tests.integration.order_events.support import (
    OrderEventsEnv,
    TransactCalls,
    order,
    redeliver,
    sqs_event,
    sqs_record,
)

pytestmark = pytest.mark.integration

BEFORE_CALL = "before-call.dynamodb.TransactWriteItems"
AFTER_CALL = "after-call.dynamodb.TransactWriteItems"


class LambdaCrashed(Exception):
    """The runtime died (timeout, out of memory, host failure) at this point."""


def _crash(**_: Any) -> None:
    raise LambdaCrashed


def _batch() -> list[dict[str, Any]]:
    """evt-1 and evt-2 share SKU-RED-MUG, so they commit in two transactions: evt-1 with evt-3
    first, evt-2 after them."""
    return [
        sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 2, "SKU-BLUE-CAP": 1})),
        sqs_record(order("evt-2", "ord-2", {"SKU-RED-MUG": 1})),
        sqs_record(order("evt-3", "ord-3", {"SKU-GREEN-PEN": 5})),
    ]


def _assert_effects_once(env: OrderEventsEnv) -> None:
    assert env.stock("SKU-RED-MUG") == (97, 3)
    assert env.stock("SKU-BLUE-CAP") == (99, 1)
    assert env.stock("SKU-GREEN-PEN") == (95, 5)
    records = env.order_records()
    assert set(records) == {(f"ord-{n}", "SHIPMENT") for n in (1, 2, 3)}
    assert {item["event_id"] for item in records.values()} == {"evt-1", "evt-2", "evt-3"}
    inbox = env.inbox()
    assert set(inbox) == {"evt-1", "evt-2", "evt-3"}
    assert {record["status"] for record in inbox.values()} == {"COMPLETED"}


def _seed(env: OrderEventsEnv) -> None:
    env.seed_stock({"SKU-RED-MUG": 100, "SKU-BLUE-CAP": 100, "SKU-GREEN-PEN": 100})


def test_crash_before_the_transaction_then_redelivery_commits_once(
    order_env: OrderEventsEnv,
) -> None:
    _seed(order_env)
    batch = _batch()
    crashing = order_env.load()
    crashing.consumer.dynamodb.meta.events.register(BEFORE_CALL, _crash)
    with pytest.raises(LambdaCrashed):
        crashing.handler(sqs_event(batch), None)

    # Nothing reached DynamoDB: no stock moved, no order, no inbox record.
    assert order_env.stock("SKU-RED-MUG") == (100, 0)
    assert order_env.order_records() == {}
    assert order_env.inbox() == {}

    fresh = order_env.load()
    results = fresh.consumer.process(parse_sqs_event(sqs_event([redeliver(r) for r in batch])))
    assert [result.outcome for result in results] == [Outcome.COMMITTED] * 3
    # And any later redelivery is a duplicate.
    again = fresh.consumer.process(parse_sqs_event(sqs_event([redeliver(r) for r in batch])))
    assert [result.outcome for result in again] == [Outcome.DUPLICATE] * 3
    _assert_effects_once(order_env)
    order_env.assert_dlq_empty()


def test_crash_after_the_transaction_committed_then_redelivery_is_a_duplicate(
    order_env: OrderEventsEnv,
) -> None:
    _seed(order_env)
    batch = _batch()
    crashing = order_env.load()
    crashing.consumer.dynamodb.meta.events.register(AFTER_CALL, _crash)
    with pytest.raises(LambdaCrashed):
        crashing.handler(sqs_event(batch), None)

    # DynamoDB committed the first transaction (evt-1 and evt-3) before the crash; evt-2's
    # transaction was never sent.
    assert order_env.stock("SKU-RED-MUG") == (98, 2)
    assert order_env.stock("SKU-GREEN-PEN") == (95, 5)
    assert set(order_env.order_records()) == {("ord-1", "SHIPMENT"), ("ord-3", "SHIPMENT")}
    assert set(order_env.inbox()) == {"evt-1", "evt-3"}

    fresh = order_env.load()
    calls = TransactCalls(fresh.consumer.dynamodb)
    redelivered = [redeliver(r) for r in batch]
    results = fresh.consumer.process(parse_sqs_event(sqs_event(redelivered)))
    assert [result.outcome for result in results] == [
        Outcome.DUPLICATE,
        Outcome.COMMITTED,
        Outcome.DUPLICATE,
    ]
    assert len(calls.calls) == 1  # evt-2 alone: the duplicates cost no write
    assert fresh.handler(sqs_event(redelivered), None) == {"batchItemFailures": []}
    assert len(calls.calls) == 1
    _assert_effects_once(order_env)
    order_env.assert_dlq_empty()


def test_crash_after_commit_then_redelivery_racing_the_inbox_read_is_a_duplicate(
    order_env: OrderEventsEnv,
) -> None:
    """The redelivery's transaction itself meets the committed inbox record (the cheap read
    missed it, e.g. an eventually consistent read): classified DUPLICATE, effects once."""
    _seed(order_env)
    batch = _batch()
    crashing = order_env.load()
    crashing.consumer.dynamodb.meta.events.register(AFTER_CALL, _crash)
    with pytest.raises(LambdaCrashed):
        crashing.handler(sqs_event(batch), None)
    assert set(order_env.inbox()) == {"evt-1", "evt-3"}

    fresh = order_env.load()

    def stale_read(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Responses"] = {table: [] for table in parsed.get("Responses", {})}

    fresh.consumer.dynamodb.meta.events.register("after-call.dynamodb.BatchGetItem", stale_read)
    calls = TransactCalls(fresh.consumer.dynamodb)
    results = fresh.consumer.process(parse_sqs_event(sqs_event([redeliver(r) for r in batch])))
    assert [result.outcome for result in results] == [
        Outcome.DUPLICATE,
        Outcome.COMMITTED,
        Outcome.DUPLICATE,
    ]
    # evt-1 and evt-3 were found by the inbox condition of a transaction, not by the read.
    assert calls.calls[0]["TransactItems"][0]["Put"]["Item"]["message_key"] == {"S": "evt-1"}
    _assert_effects_once(order_env)
    order_env.assert_dlq_empty()


def test_lost_commit_response_is_resent_with_the_same_token_and_counts_as_committed(
    order_env: OrderEventsEnv,
) -> None:
    _seed(order_env)
    batch = _batch()
    module = order_env.load()
    client = module.consumer.dynamodb
    calls = TransactCalls(client)
    lost: list[int] = []

    def lose_first_response(http_response: Any, **_: Any) -> None:
        if not lost:  # DynamoDB committed; the client never hears about it
            lost.append(http_response.status_code)
            raise ReadTimeoutError(endpoint_url=client.meta.endpoint_url)

    client.meta.events.register(AFTER_CALL, lose_first_response)
    results = module.consumer.process(parse_sqs_event(sqs_event(batch)))

    assert lost == [200]  # the first call really did commit on DynamoDB Local
    # evt-1 + evt-3 (response lost), the same request again, then evt-2.
    assert len(calls.calls) == 3
    assert calls.tokens[0] == calls.tokens[1]
    assert calls.calls[0] == calls.calls[1]  # the very same request
    assert calls.tokens[2] != calls.tokens[0]
    # DynamoDB answered the resend with success (same token): committed, not a duplicate.
    assert [result.outcome for result in results] == [Outcome.COMMITTED] * 3
    _assert_effects_once(order_env)
    order_env.assert_dlq_empty()

    # A later redelivery builds a new request (new token) and meets the inbox record.
    again = module.consumer.process(parse_sqs_event(sqs_event([redeliver(r) for r in batch])))
    assert [result.outcome for result in again] == [Outcome.DUPLICATE] * 3
    _assert_effects_once(order_env)
