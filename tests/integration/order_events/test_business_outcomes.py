"""Business outcomes are not errors: rejections and logical duplicates commit with the inbox
record, change no stock, and are neither retried nor dead-lettered (DynamoDB Local)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devkit.app_state import ORDER_EVENTS, AppState
from devkit.events import delivered_again, load_event, sqs_event, sqs_record
from devkit.handlers import load_function, process
from devkit.meters import RequestMeter
from devkit.payloads import order
from lambda_inbox import Outcome

pytestmark = pytest.mark.integration


def _result(env: AppState, key: str) -> dict[str, Any]:
    record = env.inbox_records(ORDER_EVENTS)[key]
    assert record["status"] == "COMPLETED"
    result: dict[str, Any] = json.loads(record["result"])
    return result


def test_insufficient_stock_commits_a_rejection_and_changes_no_stock(
    aws: AppState,
) -> None:
    aws.seed_stock({"SKU-RED-MUG": 100})
    event = load_event("sqs-order-insufficient-stock.json")
    module = load_function("order_events")
    assert module.handler(event, None) == {"batchItemFailures": []}

    assert aws.stock("SKU-RED-MUG") == (100, 0)
    records = aws.order_records()
    assert set(records) == {("ord-1401", "REJECTION")}
    rejection = records[("ord-1401", "REJECTION")]
    assert rejection["reason"] == "insufficient_stock"
    assert rejection["event_id"] == "evt-order-0401"
    assert rejection["customer_id"] == "cust-004"
    assert _result(aws, "evt-order-0401") == {
        "outcome": "rejected",
        "reason": "insufficient_stock",
        "skus": ["SKU-RED-MUG"],
    }
    aws.assert_dlq_empty()

    # A redelivery is a plain duplicate: the rejection is final.
    results = process(module.consumer, event)
    assert [r.outcome for r in results] == [Outcome.DUPLICATE]
    assert len(aws.order_records()) == 1


def test_one_short_line_rejects_the_whole_order_and_the_rest_of_the_batch_commits(
    aws: AppState,
) -> None:
    aws.seed_stock({"SKU-RED-MUG": 100, "SKU-BLUE-CAP": 10})
    batch = [
        # Enough RED-MUG, not enough BLUE-CAP: neither line may reserve anything.
        sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 5, "SKU-BLUE-CAP": 11})),
        sqs_record(order("evt-2", "ord-2", {"SKU-RED-MUG": 3, "SKU-BLUE-CAP": 10})),
        sqs_record(order("evt-3", "ord-3", {"SKU-BLUE-CAP": 1})),  # nothing left by then
    ]
    results = process(load_function("order_events").consumer, sqs_event(*batch))
    assert [r.outcome for r in results] == [
        Outcome.BUSINESS_OUTCOME,
        Outcome.COMMITTED,
        Outcome.BUSINESS_OUTCOME,
    ]
    assert aws.stock("SKU-RED-MUG") == (97, 3)
    assert aws.stock("SKU-BLUE-CAP") == (0, 10)
    assert set(aws.order_records()) == {
        ("ord-1", "REJECTION"),
        ("ord-2", "SHIPMENT"),
        ("ord-3", "REJECTION"),
    }
    assert _result(aws, "evt-1")["skus"] == ["SKU-BLUE-CAP"]
    assert _result(aws, "evt-2") == {"outcome": "reserved"}
    assert _result(aws, "evt-3")["skus"] == ["SKU-BLUE-CAP"]
    aws.assert_dlq_empty()


def test_unknown_sku_commits_a_rejection_and_creates_no_stock_item(
    aws: AppState,
) -> None:
    aws.seed_stock({"SKU-RED-MUG": 100})
    record = sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 1, "SKU-NO-SUCH-THING": 1}))
    module = load_function("order_events")
    assert module.handler(sqs_event(record), None) == {"batchItemFailures": []}

    assert aws.stock("SKU-NO-SUCH-THING") is None
    assert aws.stock("SKU-RED-MUG") == (100, 0)
    assert set(aws.order_records()) == {("ord-1", "REJECTION")}
    assert _result(aws, "evt-1") == {
        "outcome": "rejected",
        "reason": "insufficient_stock",
        "skus": ["SKU-NO-SUCH-THING"],
    }
    aws.assert_dlq_empty()


def test_new_event_id_for_an_order_with_a_shipment_is_a_logical_duplicate(
    aws: AppState,
) -> None:
    aws.seed_stock({"SKU-RED-MUG": 100, "SKU-BLUE-CAP": 100})
    first = sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 2}))
    module = load_function("order_events")
    assert [r.outcome for r in process(module.consumer, sqs_event(first))] == [Outcome.COMMITTED]

    # The producer emitted the same order again under a new event_id (even with other lines).
    later = sqs_record(order("evt-2", "ord-1", {"SKU-RED-MUG": 2, "SKU-BLUE-CAP": 1}))
    meter = RequestMeter(module.consumer.dynamodb)
    response = module.handler(sqs_event(later), None)
    assert response == {"batchItemFailures": []}
    assert len(meter.transactions) == 2  # the reservation (cancelled), then the inbox record alone
    assert meter.sizes[1] == 1

    assert aws.stock("SKU-RED-MUG") == (98, 2)
    assert aws.stock("SKU-BLUE-CAP") == (100, 0)
    records = aws.order_records()
    assert set(records) == {("ord-1", "SHIPMENT")}
    assert records[("ord-1", "SHIPMENT")]["event_id"] == "evt-1"
    assert _result(aws, "evt-1") == {"outcome": "reserved"}
    assert _result(aws, "evt-2") == {"outcome": "logical_duplicate"}
    # And the logical duplicate itself, redelivered, is a plain duplicate.
    assert [r.outcome for r in process(module.consumer, sqs_event(delivered_again(later)))] == [
        Outcome.DUPLICATE
    ]
    aws.assert_dlq_empty()


def test_new_event_id_for_a_rejected_order_stays_rejected_after_a_restock(
    aws: AppState,
) -> None:
    aws.seed_stock({"SKU-RED-MUG": 1})
    module = load_function("order_events")
    rejected = sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 5}))
    assert [r.outcome for r in process(module.consumer, sqs_event(rejected))] == [
        Outcome.BUSINESS_OUTCOME
    ]
    aws.seed_stock({"SKU-RED-MUG": 50})  # restocked: the order would fit now

    again = sqs_record(order("evt-2", "ord-1", {"SKU-RED-MUG": 5}))
    assert [r.outcome for r in process(module.consumer, sqs_event(again))] == [
        Outcome.BUSINESS_OUTCOME
    ]
    assert aws.stock("SKU-RED-MUG") == (50, 0)
    records = aws.order_records()
    assert set(records) == {("ord-1", "REJECTION")}
    assert records[("ord-1", "REJECTION")]["event_id"] == "evt-1"
    assert _result(aws, "evt-2") == {"outcome": "logical_duplicate"}
    aws.assert_dlq_empty()


def test_two_event_ids_for_one_order_in_one_batch_reserve_once(aws: AppState) -> None:
    aws.seed_stock({"SKU-RED-MUG": 100})
    batch = [
        sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 4})),
        sqs_record(order("evt-2", "ord-1", {"SKU-RED-MUG": 4})),
        sqs_record(order("evt-3", "ord-3", {"SKU-RED-MUG": 1})),
    ]
    module = load_function("order_events")
    assert module.handler(sqs_event(*batch), None) == {"batchItemFailures": []}
    assert aws.stock("SKU-RED-MUG") == (95, 5)
    records = aws.order_records()
    assert set(records) == {("ord-1", "SHIPMENT"), ("ord-3", "SHIPMENT")}
    assert records[("ord-1", "SHIPMENT")]["event_id"] == "evt-1"  # delivery order kept
    assert _result(aws, "evt-2") == {"outcome": "logical_duplicate"}
    assert set(aws.inbox_records(ORDER_EVENTS)) == {"evt-1", "evt-2", "evt-3"}
    aws.assert_dlq_empty()
