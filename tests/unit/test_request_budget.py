"""Acceptance: DynamoDB requests per SQS batch, counted at the botocore boundary.

A `before-call.dynamodb` hook on the consumer's own client records every operation the inbox
sends. moto stands in for DynamoDB: this counts requests, it makes no concurrency claim.

- 10 new orders on distinct items: at most 2 requests (1 BatchGetItem + 1 TransactWriteItems).
- The same 10 orders redelivered with new messageIds: at most 1 request, and no write at all.
"""

from __future__ import annotations

from collections import Counter
from types import ModuleType
from typing import Any

from lambda_inbox import Outcome
from lambda_inbox.sqs import parse_sqs_event
from tests.unit.conftest import MotoAws
from tests.unit.helpers import order_body, seed_stock, sqs_event, sqs_record, stock_of

BATCH_SIZE = 10
WRITE_OPERATIONS = frozenset(
    {"TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"}
)


def record_requests(module: ModuleType) -> list[str]:
    """Every DynamoDB operation the consumer's client sends from now on, in order."""
    calls: list[str] = []

    def on_call(model: Any, **_: Any) -> None:
        calls.append(model.name)

    module.consumer.dynamodb.meta.events.register("before-call.dynamodb", on_call)
    return calls


def ten_orders(aws: MotoAws) -> list[str]:
    """Bodies of 10 new orders, each on its own two SKUs (seeded), so none collide."""
    bodies = []
    for index in range(BATCH_SIZE):
        skus = [f"SKU-{index:02d}-A", f"SKU-{index:02d}-B"]
        seed_stock(aws.dynamodb, aws.domain, dict.fromkeys(skus, 50))
        bodies.append(
            order_body(
                f"evt-budget-{index:02d}",
                f"ord-budget-{index:02d}",
                [(skus[0], 1), (skus[1], 2)],
                customer_id=f"cust-{index:03d}",
            )
        )
    return bodies


def test_ten_new_orders_cost_one_read_and_one_transaction(
    aws: MotoAws, order_events: ModuleType
) -> None:
    event = sqs_event(*(sqs_record(body) for body in ten_orders(aws)))
    calls = record_requests(order_events)

    response = order_events.handler(event, None)

    counts = Counter(calls)
    print(f"\n[request budget] 10 new orders: {len(calls)} DynamoDB requests {dict(counts)}")
    assert response == {"batchItemFailures": []}
    assert len(calls) <= 2
    assert counts == {"BatchGetItem": 1, "TransactWriteItems": 1}
    # The single transaction really did commit all 10 orders.
    for index in range(BATCH_SIZE):
        assert stock_of(aws.dynamodb, aws.domain, f"SKU-{index:02d}-A") == (49, 1)
        assert stock_of(aws.dynamodb, aws.domain, f"SKU-{index:02d}-B") == (48, 2)


def test_ten_redelivered_orders_cost_one_read_and_no_write(
    aws: MotoAws, order_events: ModuleType
) -> None:
    bodies = ten_orders(aws)
    first = sqs_event(*(sqs_record(body) for body in bodies))
    assert order_events.handler(first, None) == {"batchItemFailures": []}
    redelivered = sqs_event(*(sqs_record(body) for body in bodies))  # new messageIds
    assert {r["messageId"] for r in redelivered["Records"]}.isdisjoint(
        r["messageId"] for r in first["Records"]
    )
    calls = record_requests(order_events)

    response = order_events.handler(redelivered, None)

    counts = Counter(calls)
    print(
        f"\n[request budget] 10 redelivered orders: {len(calls)} DynamoDB request(s) {dict(counts)}"
    )
    assert response == {"batchItemFailures": []}
    assert len(calls) <= 1
    assert counts == {"BatchGetItem": 1}
    assert not WRITE_OPERATIONS & set(calls)
    # Each record was recognised as a duplicate (checked on a further delivery).
    calls.clear()
    results = order_events.consumer.process(parse_sqs_event(redelivered))
    assert [result.outcome for result in results] == [Outcome.DUPLICATE] * BATCH_SIZE
    assert calls == ["BatchGetItem"]
    for index in range(BATCH_SIZE):
        assert stock_of(aws.dynamodb, aws.domain, f"SKU-{index:02d}-A") == (49, 1)
