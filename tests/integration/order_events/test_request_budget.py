"""Acceptance: DynamoDB requests per SQS batch of the order handler, counted at the botocore
boundary (a `before-call` hook on the consumer's own client) on DynamoDB Local.

- 10 new orders on distinct items: 1 request, the transaction (the read is skipped: nothing
  suggests a duplicate, and the inbox `Put` finds any).
- The same batch redelivered (ApproximateReceiveCount 2): 1 request, the read, and no write.
- A new batch holding one producer duplicate (an earlier order under a new messageId): at most
  3 requests (a cancelled transaction naming the taken key, then the other nine).
- The same orders under new messageIds: one cancelled transaction, nothing written; the next
  batch reads first (recent duplicates).
- `duplicate_read="always"` reads before every commit.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import sqs_event, sqs_record
from devkit.handlers import load_function
from devkit.meters import WRITE_OPERATIONS, RequestMeter
from devkit.payloads import order
from lambda_inbox import Outcome
from lambda_inbox.wire import parse_sqs_event
from lambda_inbox_tools.testing.events import delivered_again

pytestmark = pytest.mark.integration

BATCH_SIZE = 10


@pytest.fixture
def order_events(aws: AppState) -> ModuleType:
    return load_function("order_events")


def orders(aws: AppState, prefix: str, count: int = BATCH_SIZE) -> list[dict[str, Any]]:
    """Bodies of `count` new orders, each on two SKUs of its own (seeded), so none collide."""
    bodies = []
    for index in range(count):
        skus = [f"SKU-{prefix}-{index:02d}-A", f"SKU-{prefix}-{index:02d}-B"]
        aws.seed_stock(dict.fromkeys(skus, 50))
        bodies.append(
            order(
                f"evt-{prefix}-{index:02d}",
                f"ord-{prefix}-{index:02d}",
                [(skus[0], 1), (skus[1], 2)],
            )
        )
    return bodies


def run(module: ModuleType, event: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    meter = RequestMeter(module.consumer.dynamodb)
    try:
        response = module.handler(event, None)
    finally:
        meter.detach(module.consumer.dynamodb)
    return meter.operations(), response


def outcomes(module: ModuleType, event: dict[str, Any]) -> list[Outcome]:
    return [r.outcome for r in module.consumer.process(parse_sqs_event(event))]


def test_ten_new_orders_cost_one_request(aws: AppState, order_events: ModuleType) -> None:
    event = sqs_event(*(sqs_record(body) for body in orders(aws, "new")))

    calls, response = run(order_events, event)

    print(f"\n[request budget] 10 new orders: {calls}")
    assert response == {"batchItemFailures": []}
    assert calls == ["TransactWriteItems"]
    for index in range(BATCH_SIZE):  # the one transaction committed all ten
        assert aws.stock(f"SKU-new-{index:02d}-A") == (49, 1)
        assert aws.stock(f"SKU-new-{index:02d}-B") == (48, 2)


def test_the_same_batch_redelivered_costs_one_read_and_no_write(
    aws: AppState, order_events: ModuleType
) -> None:
    first = sqs_event(*(sqs_record(body) for body in orders(aws, "again")))
    assert order_events.handler(first, None) == {"batchItemFailures": []}
    again = sqs_event(*(delivered_again(record) for record in first["Records"]))

    calls, response = run(order_events, again)

    print(f"\n[request budget] the same 10 orders redelivered: {calls}")
    assert response == {"batchItemFailures": []}
    assert calls == ["BatchGetItem"]
    assert (
        outcomes(order_events, sqs_event(*(delivered_again(r) for r in again["Records"])))
        == [Outcome.DUPLICATE] * BATCH_SIZE
    )
    assert aws.stock("SKU-again-00-A") == (49, 1)


def test_a_new_batch_with_one_producer_duplicate_costs_at_most_three_requests(
    aws: AppState, order_events: ModuleType
) -> None:
    (earlier,) = orders(aws, "early", 1)
    assert order_events.handler(sqs_event(sqs_record(earlier)), None) == {"batchItemFailures": []}
    bodies = orders(aws, "mixed", BATCH_SIZE - 1)
    records = [sqs_record(body) for body in bodies]
    records.insert(4, sqs_record(earlier))  # the producer sent it again: a new messageId
    event = sqs_event(*records)

    calls, response = run(order_events, event)

    print(f"\n[request budget] 9 new orders and a producer duplicate: {calls}")
    assert response == {"batchItemFailures": []}
    assert len(calls) <= 3
    assert calls == ["TransactWriteItems", "TransactWriteItems"]
    assert aws.stock("SKU-early-00-A") == (49, 1)  # the duplicate reserved nothing again
    for index in range(BATCH_SIZE - 1):
        assert aws.stock(f"SKU-mixed-{index:02d}-A") == (49, 1)
    statuses = aws.inbox_statuses()
    assert sorted(statuses) == ["evt-early-00"] + [f"evt-mixed-{i:02d}" for i in range(9)]
    assert set(statuses.values()) == {"COMPLETED"}


def test_orders_under_new_ids_cancel_one_transaction_then_the_next_batch_reads_first(
    aws: AppState, order_events: ModuleType
) -> None:
    bodies = orders(aws, "resent")
    assert order_events.handler(sqs_event(*(sqs_record(b) for b in bodies)), None) == {
        "batchItemFailures": []
    }
    domain_before = aws.domain_items()

    calls, response = run(order_events, sqs_event(*(sqs_record(b) for b in bodies)))

    assert response == {"batchItemFailures": []}
    assert calls == ["TransactWriteItems"]  # cancelled: every inbox key taken
    assert aws.domain_items() == domain_before
    calls, response = run(order_events, sqs_event(*(sqs_record(b) for b in bodies)))
    assert response == {"batchItemFailures": []}
    assert calls == ["BatchGetItem"]
    assert not WRITE_OPERATIONS & set(calls)
    assert aws.domain_items() == domain_before


def test_the_read_can_be_forced(aws: AppState, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INBOX_DUPLICATE_READ", "always")
    module = load_function("order_events")
    assert module.consumer.config.commit.duplicate_read == "always"
    calls, response = run(module, sqs_event(*(sqs_record(b) for b in orders(aws, "forced"))))
    assert response == {"batchItemFailures": []}
    assert calls == ["BatchGetItem", "TransactWriteItems"]
