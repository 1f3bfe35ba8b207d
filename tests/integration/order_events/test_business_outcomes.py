"""Business outcomes are not errors: rejections and logical duplicates commit with the inbox
record, change no stock, and are neither retried nor dead-lettered (DynamoDB Local)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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

EVENTS = Path(__file__).resolve().parents[3] / "events"


def _process(module: Any, records: list[dict[str, Any]]) -> list[Any]:
    return list(module.consumer.process(parse_sqs_event(sqs_event(records))))


def _result(env: OrderEventsEnv, key: str) -> dict[str, Any]:
    record = env.inbox()[key]
    assert record["status"] == "COMPLETED"
    result: dict[str, Any] = json.loads(record["result"])
    return result


def test_insufficient_stock_commits_a_rejection_and_changes_no_stock(
    order_env: OrderEventsEnv,
) -> None:
    order_env.seed_stock({"SKU-RED-MUG": 100})
    event = json.loads((EVENTS / "sqs-order-insufficient-stock.json").read_text())
    module = order_env.load()
    assert module.handler(event, None) == {"batchItemFailures": []}

    assert order_env.stock("SKU-RED-MUG") == (100, 0)
    records = order_env.order_records()
    assert set(records) == {("ord-1401", "REJECTION")}
    rejection = records[("ord-1401", "REJECTION")]
    assert rejection["reason"] == "insufficient_stock"
    assert rejection["event_id"] == "evt-order-0401"
    assert rejection["customer_id"] == "cust-004"
    assert _result(order_env, "evt-order-0401") == {
        "outcome": "rejected",
        "reason": "insufficient_stock",
        "skus": ["SKU-RED-MUG"],
    }
    order_env.assert_dlq_empty()

    # A redelivery is a plain duplicate: the rejection is final.
    results = module.consumer.process(parse_sqs_event(event))
    assert [r.outcome for r in results] == [Outcome.DUPLICATE]
    assert len(order_env.order_records()) == 1


def test_one_short_line_rejects_the_whole_order_and_the_rest_of_the_batch_commits(
    order_env: OrderEventsEnv,
) -> None:
    order_env.seed_stock({"SKU-RED-MUG": 100, "SKU-BLUE-CAP": 10})
    batch = [
        # Enough RED-MUG, not enough BLUE-CAP: neither line may reserve anything.
        sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 5, "SKU-BLUE-CAP": 11})),
        sqs_record(order("evt-2", "ord-2", {"SKU-RED-MUG": 3, "SKU-BLUE-CAP": 10})),
        sqs_record(order("evt-3", "ord-3", {"SKU-BLUE-CAP": 1})),  # nothing left by then
    ]
    results = _process(order_env.load(), batch)
    assert [r.outcome for r in results] == [
        Outcome.BUSINESS_OUTCOME,
        Outcome.COMMITTED,
        Outcome.BUSINESS_OUTCOME,
    ]
    assert order_env.stock("SKU-RED-MUG") == (97, 3)
    assert order_env.stock("SKU-BLUE-CAP") == (0, 10)
    assert set(order_env.order_records()) == {
        ("ord-1", "REJECTION"),
        ("ord-2", "SHIPMENT"),
        ("ord-3", "REJECTION"),
    }
    assert _result(order_env, "evt-1")["skus"] == ["SKU-BLUE-CAP"]
    assert _result(order_env, "evt-2") == {"outcome": "reserved"}
    assert _result(order_env, "evt-3")["skus"] == ["SKU-BLUE-CAP"]
    order_env.assert_dlq_empty()


def test_unknown_sku_commits_a_rejection_and_creates_no_stock_item(
    order_env: OrderEventsEnv,
) -> None:
    order_env.seed_stock({"SKU-RED-MUG": 100})
    record = sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 1, "SKU-NO-SUCH-THING": 1}))
    module = order_env.load()
    assert module.handler(sqs_event([record]), None) == {"batchItemFailures": []}

    assert order_env.stock("SKU-NO-SUCH-THING") is None
    assert order_env.stock("SKU-RED-MUG") == (100, 0)
    assert set(order_env.order_records()) == {("ord-1", "REJECTION")}
    assert _result(order_env, "evt-1") == {
        "outcome": "rejected",
        "reason": "insufficient_stock",
        "skus": ["SKU-NO-SUCH-THING"],
    }
    order_env.assert_dlq_empty()


def test_new_event_id_for_an_order_with_a_shipment_is_a_logical_duplicate(
    order_env: OrderEventsEnv,
) -> None:
    order_env.seed_stock({"SKU-RED-MUG": 100, "SKU-BLUE-CAP": 100})
    first = sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 2}))
    module = order_env.load()
    assert [r.outcome for r in _process(module, [first])] == [Outcome.COMMITTED]

    # The producer emitted the same order again under a new event_id (even with other lines).
    later = sqs_record(order("evt-2", "ord-1", {"SKU-RED-MUG": 2, "SKU-BLUE-CAP": 1}))
    calls = TransactCalls(module.consumer.dynamodb)
    response = module.handler(sqs_event([later]), None)
    assert response == {"batchItemFailures": []}
    assert len(calls.calls) == 2  # the reservation (cancelled), then the inbox record alone
    assert calls.sizes[1] == 1

    assert order_env.stock("SKU-RED-MUG") == (98, 2)
    assert order_env.stock("SKU-BLUE-CAP") == (100, 0)
    records = order_env.order_records()
    assert set(records) == {("ord-1", "SHIPMENT")}
    assert records[("ord-1", "SHIPMENT")]["event_id"] == "evt-1"
    assert _result(order_env, "evt-1") == {"outcome": "reserved"}
    assert _result(order_env, "evt-2") == {"outcome": "logical_duplicate"}
    # And the logical duplicate itself, redelivered, is a plain duplicate.
    assert [r.outcome for r in _process(module, [redeliver(later)])] == [Outcome.DUPLICATE]
    order_env.assert_dlq_empty()


def test_new_event_id_for_a_rejected_order_stays_rejected_after_a_restock(
    order_env: OrderEventsEnv,
) -> None:
    order_env.seed_stock({"SKU-RED-MUG": 1})
    module = order_env.load()
    rejected = sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 5}))
    assert [r.outcome for r in _process(module, [rejected])] == [Outcome.BUSINESS_OUTCOME]
    order_env.seed_stock({"SKU-RED-MUG": 50})  # restocked: the order would fit now

    again = sqs_record(order("evt-2", "ord-1", {"SKU-RED-MUG": 5}))
    assert [r.outcome for r in _process(module, [again])] == [Outcome.BUSINESS_OUTCOME]
    assert order_env.stock("SKU-RED-MUG") == (50, 0)
    records = order_env.order_records()
    assert set(records) == {("ord-1", "REJECTION")}
    assert records[("ord-1", "REJECTION")]["event_id"] == "evt-1"
    assert _result(order_env, "evt-2") == {"outcome": "logical_duplicate"}
    order_env.assert_dlq_empty()


def test_two_event_ids_for_one_order_in_one_batch_reserve_once(order_env: OrderEventsEnv) -> None:
    order_env.seed_stock({"SKU-RED-MUG": 100})
    batch = [
        sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 4})),
        sqs_record(order("evt-2", "ord-1", {"SKU-RED-MUG": 4})),
        sqs_record(order("evt-3", "ord-3", {"SKU-RED-MUG": 1})),
    ]
    module = order_env.load()
    assert module.handler(sqs_event(batch), None) == {"batchItemFailures": []}
    assert order_env.stock("SKU-RED-MUG") == (95, 5)
    records = order_env.order_records()
    assert set(records) == {("ord-1", "SHIPMENT"), ("ord-3", "SHIPMENT")}
    assert records[("ord-1", "SHIPMENT")]["event_id"] == "evt-1"  # delivery order kept
    assert _result(order_env, "evt-2") == {"outcome": "logical_duplicate"}
    assert set(order_env.inbox()) == {"evt-1", "evt-2", "evt-3"}
    order_env.assert_dlq_empty()
