"""Acceptance: DynamoDB requests per SQS batch, counted at the botocore boundary.

A `before-call.dynamodb` hook on the consumer's own client records every operation the inbox
sends. moto stands in for DynamoDB: this counts requests, it makes no concurrency claim.

- 10 new orders on distinct items: at most 2 requests (1 BatchGetItem + 1 TransactWriteItems).
- The same 10 orders redelivered with new messageIds: at most 1 request, and no write at all.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from devkit.app_state import AppState
from devkit.events import sqs_event, sqs_record
from devkit.meters import WRITE_OPERATIONS, RequestMeter
from devkit.payloads import order
from lambda_inbox import Outcome
from lambda_inbox.sqs import parse_sqs_event

BATCH_SIZE = 10


def ten_orders(aws: AppState) -> list[dict[str, Any]]:
    """Bodies of 10 new orders, each on its own two SKUs (seeded), so none collide."""
    bodies = []
    for index in range(BATCH_SIZE):
        skus = [f"SKU-{index:02d}-A", f"SKU-{index:02d}-B"]
        aws.seed_stock(dict.fromkeys(skus, 50))
        bodies.append(
            order(
                f"evt-budget-{index:02d}",
                f"ord-budget-{index:02d}",
                [(skus[0], 1), (skus[1], 2)],
                customer_id=f"cust-{index:03d}",
            )
        )
    return bodies


def test_ten_new_orders_cost_one_read_and_one_transaction(
    aws: AppState, order_events: ModuleType
) -> None:
    event = sqs_event(*(sqs_record(body) for body in ten_orders(aws)))
    meter = RequestMeter(order_events.consumer.dynamodb)

    response = order_events.handler(event, None)

    calls, counts = meter.operations(), meter.counts()
    print(f"\n[request budget] 10 new orders: {len(calls)} DynamoDB requests {dict(counts)}")
    assert response == {"batchItemFailures": []}
    assert len(calls) <= 2
    assert counts == {"BatchGetItem": 1, "TransactWriteItems": 1}
    # The single transaction really did commit all 10 orders.
    for index in range(BATCH_SIZE):
        assert aws.stock(f"SKU-{index:02d}-A") == (49, 1)
        assert aws.stock(f"SKU-{index:02d}-B") == (48, 2)


def test_ten_redelivered_orders_cost_one_read_and_no_write(
    aws: AppState, order_events: ModuleType
) -> None:
    bodies = ten_orders(aws)
    first = sqs_event(*(sqs_record(body) for body in bodies))
    assert order_events.handler(first, None) == {"batchItemFailures": []}
    redelivered = sqs_event(*(sqs_record(body) for body in bodies))  # new messageIds
    assert {r["messageId"] for r in redelivered["Records"]}.isdisjoint(
        r["messageId"] for r in first["Records"]
    )
    meter = RequestMeter(order_events.consumer.dynamodb)

    response = order_events.handler(redelivered, None)

    calls, counts = meter.operations(), meter.counts()
    print(
        f"\n[request budget] 10 redelivered orders: {len(calls)} DynamoDB request(s) {dict(counts)}"
    )
    assert response == {"batchItemFailures": []}
    assert len(calls) <= 1
    assert counts == {"BatchGetItem": 1}
    assert not WRITE_OPERATIONS & set(calls)
    # Each record was recognised as a duplicate (checked on a further delivery).
    meter.clear()
    results = order_events.consumer.process(parse_sqs_event(redelivered))
    assert [result.outcome for result in results] == [Outcome.DUPLICATE] * BATCH_SIZE
    assert meter.operations() == ["BatchGetItem"]
    for index in range(BATCH_SIZE):
        assert aws.stock(f"SKU-{index:02d}-A") == (49, 1)
