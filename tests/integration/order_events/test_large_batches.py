"""A batch whose writes exceed DynamoDB's 100 actions per transaction commits in several
transactions, each within the limit, with every effect exactly once (DynamoDB Local)."""

from __future__ import annotations

from typing import Any

import pytest

from devkit.app_state import ORDER_EVENTS, AppState
from devkit.events import delivered_again, sqs_event, sqs_record
from devkit.handlers import load_function, process
from devkit.meters import RequestMeter
from devkit.payloads import order
from lambda_inbox import Outcome

pytestmark = pytest.mark.integration

ORDERS = 10
LINES = 15
#: Per order: one update per line, the shipment put, the rejection check, the notification
#: request (outbox) and the inbox put.
ACTIONS_PER_ORDER = LINES + 4
STOCK = 50


def _sku(order_number: int, line: int) -> str:
    return f"SKU-{order_number:02d}-{line:02d}"


def _qty(order_number: int, line: int) -> int:
    return 1 + (order_number + line) % 4


def _orders(short_order: int | None = None) -> list[dict[str, Any]]:
    """10 orders x 15 lines, every line on its own SKU (so all could share one transaction,
    were it not for the 100-action limit). `short_order` asks for more than the stock."""
    return [
        sqs_record(
            order(
                f"evt-{o}",
                f"ord-{o}",
                [
                    (_sku(o, line), STOCK + 1 if o == short_order and line == 7 else _qty(o, line))
                    for line in range(LINES)
                ],
            )
        )
        for o in range(ORDERS)
    ]


def _seed(env: AppState) -> None:
    env.seed_stock({_sku(o, line): STOCK for o in range(ORDERS) for line in range(LINES)})


def test_batch_of_190_actions_commits_in_transactions_of_at_most_100(
    aws: AppState,
) -> None:
    _seed(aws)
    batch = _orders()
    module = load_function("order_events")
    meter = RequestMeter(module.consumer.dynamodb)
    assert module.handler(sqs_event(*batch), None) == {"batchItemFailures": []}

    assert len(meter.transactions) > 1
    assert max(meter.sizes) <= 100
    assert sum(meter.sizes) == ORDERS * ACTIONS_PER_ORDER  # every action sent exactly once
    assert len(meter.transactions) == 2  # 5 orders (95 actions) per transaction
    # Each order's actions travel together, with its inbox record.
    for call in meter.transactions:
        inbox_keys = {
            item["Put"]["Item"]["message_key"]["S"]
            for item in call["TransactItems"]
            if "Put" in item and "message_key" in item["Put"]["Item"]
        }
        assert len(call["TransactItems"]) == len(inbox_keys) * ACTIONS_PER_ORDER

    for o in range(ORDERS):
        for line in range(LINES):
            assert aws.stock(_sku(o, line)) == (STOCK - _qty(o, line), _qty(o, line))
    records = aws.order_records()
    assert set(records) == {(f"ord-{o}", "SHIPMENT") for o in range(ORDERS)}
    assert all(len(item["lines"]) == LINES for item in records.values())
    inbox = aws.inbox_records(ORDER_EVENTS)
    assert set(inbox) == {f"evt-{o}" for o in range(ORDERS)}
    assert {record["status"] for record in inbox.values()} == {"COMPLETED"}
    aws.assert_dlq_empty()

    # Redelivered whole: duplicates only, no transaction.
    again = process(module.consumer, sqs_event(*(delivered_again(r) for r in batch)))
    assert [r.outcome for r in again] == [Outcome.DUPLICATE] * ORDERS
    assert len(meter.transactions) == 2


def test_large_batch_with_one_short_order_rejects_it_and_commits_the_others_once(
    aws: AppState,
) -> None:
    _seed(aws)
    short = 6
    module = load_function("order_events")
    meter = RequestMeter(module.consumer.dynamodb)
    results = process(module.consumer, sqs_event(*_orders(short_order=short)))

    assert [r.outcome for r in results] == [
        Outcome.BUSINESS_OUTCOME if o == short else Outcome.COMMITTED for o in range(ORDERS)
    ]
    assert len(meter.transactions) > 2  # the cancelled group was split and retried
    assert max(meter.sizes) <= 100
    for o in range(ORDERS):
        for line in range(LINES):
            expected = (STOCK, 0) if o == short else (STOCK - _qty(o, line), _qty(o, line))
            assert aws.stock(_sku(o, line)) == expected
    records = aws.order_records()
    assert set(records) == {
        (f"ord-{o}", "REJECTION" if o == short else "SHIPMENT") for o in range(ORDERS)
    }
    assert len(aws.inbox_records(ORDER_EVENTS)) == ORDERS
    aws.assert_dlq_empty()
