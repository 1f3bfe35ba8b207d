"""The same OrderPlaced delivered many times has its effects exactly once (DynamoDB Local).

Redeliveries of one SQS message (same messageId), producer retries (new messageIds), duplicates
inside one batch and across batches, and many concurrent invocations whose batches overlap on
event ids and on SKUs.
"""

from __future__ import annotations

import functools
import json
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from devkit.app_state import ORDER_EVENTS, AppState
from devkit.events import delivered_again, load_event, sqs_event, sqs_record
from devkit.handlers import deliver_until_acknowledged, load_function, process, run_concurrently
from devkit.meters import RequestMeter
from devkit.payloads import order
from lambda_inbox import Outcome

pytestmark = pytest.mark.integration

RETENTION_SECONDS = 7 * 24 * 3600


def outcomes(module: ModuleType, records: list[dict[str, Any]]) -> list[Outcome]:
    """Run one batch through the function's consumer; the outcome of each record, in order."""
    results = process(module.consumer, sqs_event(*records))
    return [result.outcome for result in results]


def assert_completed(
    env: AppState, inbox: dict[str, dict[str, Any]], key: str, result: str
) -> None:
    record = inbox[key]
    assert record["pk"] == f"{ORDER_EVENTS}#{key}"
    assert record["status"] == "COMPLETED"
    assert record["consumer"] == ORDER_EVENTS
    assert json.loads(record["result"])["outcome"] == result
    assert len(record["fingerprint"]) == 64
    now = time.time()
    assert now + RETENTION_SECONDS - 120 < record["expires_at"] <= now + RETENTION_SECONDS + 1
    assert "gsi_open_pk" not in record  # completed records stay out of the open-records index


def test_same_message_id_redelivered_has_effects_once(aws: AppState) -> None:
    aws.seed_stock({"SKU-RED-MUG": 100, "SKU-BLUE-CAP": 100})
    record = sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 2, "SKU-BLUE-CAP": 1}))

    first = load_function("order_events")
    assert first.handler(sqs_event(record), None) == {"batchItemFailures": []}
    # SQS redelivers the same message (visibility timeout): to the same and to a new container.
    assert outcomes(first, [delivered_again(record)]) == [Outcome.DUPLICATE]
    second = load_function("order_events")
    meter = RequestMeter(second.consumer.dynamodb)
    assert second.handler(sqs_event(delivered_again(record)), None) == {"batchItemFailures": []}
    assert outcomes(second, [delivered_again(record), delivered_again(record)]) == [
        Outcome.DUPLICATE,
        Outcome.DUPLICATE,
    ]
    assert meter.transactions == []  # duplicates cost no write at all

    assert aws.stock("SKU-RED-MUG") == (98, 2)
    assert aws.stock("SKU-BLUE-CAP") == (99, 1)
    records = aws.order_records()
    assert set(records) == {("ord-1", "SHIPMENT")}
    shipment = records[("ord-1", "SHIPMENT")]
    assert shipment["status"] == "PENDING"
    assert shipment["event_id"] == "evt-1"
    assert shipment["customer_id"] == "cust-001"
    assert shipment["lines"] == [
        {"sku": "SKU-RED-MUG", "qty": 2},
        {"sku": "SKU-BLUE-CAP", "qty": 1},
    ]
    inbox = aws.inbox_records(ORDER_EVENTS)
    assert set(inbox) == {"evt-1"}
    assert_completed(aws, inbox, "evt-1", "reserved")
    assert inbox["evt-1"]["source"].endswith("OrderEventsQueue")
    aws.assert_dlq_empty()


def test_producer_retries_in_one_batch_and_across_batches_have_effects_once(
    aws: AppState,
) -> None:
    aws.seed_stock({"SKU-RED-MUG": 50, "SKU-BLUE-CAP": 50, "SKU-GREEN-PEN": 50})
    one = order("evt-1", "ord-1", {"SKU-RED-MUG": 1, "SKU-GREEN-PEN": 2})
    two = order("evt-2", "ord-2", {"SKU-RED-MUG": 3})
    three = order("evt-3", "ord-3", {"SKU-BLUE-CAP": 4, "SKU-RED-MUG": 1})
    module = load_function("order_events")

    # Same body, a new messageId each time: the producer sent evt-1 three times.
    two_record = sqs_record(two)
    batch = [sqs_record(one), sqs_record(one), two_record, sqs_record(one)]
    assert outcomes(module, batch) == [
        Outcome.COMMITTED,
        Outcome.DUPLICATE,
        Outcome.COMMITTED,
        Outcome.DUPLICATE,
    ]
    # Next batch: yet another copy of evt-1, an SQS redelivery of evt-2, a new order, and a
    # producer retry of that new order in the same batch.
    batch = [sqs_record(one), delivered_again(two_record), sqs_record(three), sqs_record(three)]
    assert outcomes(load_function("order_events"), batch) == [
        Outcome.DUPLICATE,
        Outcome.DUPLICATE,
        Outcome.COMMITTED,
        Outcome.DUPLICATE,
    ]
    response = module.handler(sqs_event(sqs_record(one), sqs_record(two)), None)
    assert response == {"batchItemFailures": []}

    assert aws.stock("SKU-RED-MUG") == (45, 5)
    assert aws.stock("SKU-GREEN-PEN") == (48, 2)
    assert aws.stock("SKU-BLUE-CAP") == (46, 4)
    records = aws.order_records()
    assert set(records) == {("ord-1", "SHIPMENT"), ("ord-2", "SHIPMENT"), ("ord-3", "SHIPMENT")}
    assert {key: item["event_id"] for key, item in records.items()} == {
        ("ord-1", "SHIPMENT"): "evt-1",
        ("ord-2", "SHIPMENT"): "evt-2",
        ("ord-3", "SHIPMENT"): "evt-3",
    }
    inbox = aws.inbox_records(ORDER_EVENTS)
    assert set(inbox) == {"evt-1", "evt-2", "evt-3"}
    for key in inbox:
        assert_completed(aws, inbox, key, "reserved")
    aws.assert_dlq_empty()


def test_sample_batch_with_duplicates_and_its_redelivery(aws: AppState) -> None:
    aws.seed_stock({"SKU-RED-MUG": 100, "SKU-BLUE-CAP": 100, "SKU-GREEN-PEN": 100})
    event = load_event("sqs-order-batch-duplicates.json")
    module = load_function("order_events")
    results = process(module.consumer, event)
    assert [result.outcome for result in results] == [
        Outcome.COMMITTED,
        Outcome.COMMITTED,
        Outcome.COMMITTED,
        Outcome.COMMITTED,
        Outcome.DUPLICATE,
        Outcome.DUPLICATE,
    ]
    assert [result.message_key for result in results] == [
        "evt-order-0101",
        "evt-order-0102",
        "evt-order-0103",
        "evt-order-0104",
        "evt-order-0101",
        "evt-order-0102",
    ]
    # The whole file again, to a fresh container: only duplicates, no transaction at all.
    again = load_function("order_events")
    meter = RequestMeter(again.consumer.dynamodb)
    assert again.handler(event, None) == {"batchItemFailures": []}
    assert meter.transactions == []

    assert aws.stock("SKU-RED-MUG") == (97, 3)
    assert aws.stock("SKU-BLUE-CAP") == (98, 2)
    assert aws.stock("SKU-GREEN-PEN") == (95, 5)
    records = aws.order_records()
    assert sorted(records) == [(f"ord-110{i}", "SHIPMENT") for i in range(1, 5)]
    inbox = aws.inbox_records(ORDER_EVENTS)
    assert sorted(inbox) == [f"evt-order-010{i}" for i in range(1, 5)]
    for key in inbox:
        assert_completed(aws, inbox, key, "reserved")
    aws.assert_dlq_empty()


# ---- concurrency ---------------------------------------------------------------------------

THREADS = 8
BATCH_SIZE = 10
ROUNDS = 3
ORDERS_PER_ROUND = 24
#: Orders that the producer also emitted under a second event_id (a logical duplicate).
RE_EMITTED_ORDERS = 3
HOT_SKUS = ("SKU-A", "SKU-B", "SKU-C", "SKU-D")
INITIAL_STOCK = 100_000
MAX_REDELIVERIES = 12


def _round_events(rng: random.Random, round_number: int) -> list[dict[str, Any]]:
    events = []
    for index in range(ORDERS_PER_ROUND):
        skus = rng.sample(HOT_SKUS, rng.randint(1, 3))
        lines = [(sku, rng.randint(1, 3)) for sku in skus]
        order_id = f"ord-r{round_number}-{index}"
        events.append(order(f"evt-r{round_number}-{index}", order_id, lines))
        if index < RE_EMITTED_ORDERS:
            events.append(order(f"evt-r{round_number}-{index}-again", order_id, lines))
    return events


def _overlapping_batches(
    rng: random.Random, events: list[dict[str, Any]]
) -> list[list[dict[str, Any]]]:
    """THREADS batches of BATCH_SIZE records; every event is in one batch at least, most in
    several; each event has three messageIds (an SQS redelivery reuses one, a producer retry
    has another), and a batch may carry the same event more than once."""
    message_ids = {e["event_id"]: [f"{e['event_id']}-m{n}" for n in range(3)] for e in events}
    batches: list[list[dict[str, Any]]] = [[] for _ in range(THREADS)]
    for position, event in enumerate(events):
        batches[position % THREADS].append(event)
    records: list[list[dict[str, Any]]] = []
    for batch in batches:
        while len(batch) < BATCH_SIZE:
            candidate = rng.choice(events)
            if batch.count(candidate) < len(message_ids[candidate["event_id"]]):
                batch.append(candidate)
        rng.shuffle(batch)
        used: set[str] = set()
        chosen = []
        for event in batch:
            free = [mid for mid in message_ids[event["event_id"]] if mid not in used]
            message_id = rng.choice(free)
            used.add(message_id)
            chosen.append(sqs_record(event, message_id=message_id))
        records.append(chosen)
    return records


def _container(module: ModuleType, records: list[dict[str, Any]]) -> Callable[[], int]:
    """One Lambda container: invoke, then redeliver exactly the reported failures (as SQS does)."""
    event = sqs_event(*records)
    return functools.partial(
        deliver_until_acknowledged, module.handler, event, max_deliveries=MAX_REDELIVERIES
    )


@pytest.mark.parametrize("shared_module", [False, True], ids=["own-module", "shared-module"])
def test_concurrent_overlapping_batches_have_effects_exactly_once(
    aws: AppState, shared_module: bool
) -> None:
    aws.seed_stock(dict.fromkeys(HOT_SKUS, INITIAL_STOCK))
    shared = load_function("order_events")
    modules = [shared if shared_module else load_function("order_events") for _ in range(THREADS)]
    rng = random.Random(20240611 + shared_module)
    all_events: list[dict[str, Any]] = []
    for round_number in range(ROUNDS):
        events = _round_events(rng, round_number)
        all_events.extend(events)
        batches = _overlapping_batches(rng, events)
        # Each container ends with nothing reported within the redelivery bound.
        run_concurrently([_container(m, b) for m, b in zip(modules, batches, strict=True)])

    # One effect per order, whatever the number of deliveries, event ids and racing threads.
    by_order: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in all_events:
        by_order[event["order_id"]].append(event)
    reserved: Counter[str] = Counter()
    for events in by_order.values():
        for line in events[0]["lines"]:
            reserved[line["sku"]] += line["qty"]
    for sku in HOT_SKUS:
        assert aws.stock(sku) == (INITIAL_STOCK - reserved[sku], reserved[sku])

    records = aws.order_records()
    assert set(records) == {(order_id, "SHIPMENT") for order_id in by_order}
    inbox = aws.inbox_records(ORDER_EVENTS)
    assert set(inbox) == {event["event_id"] for event in all_events}
    for order_id, events in by_order.items():
        shipment = records[(order_id, "SHIPMENT")]
        event_ids = [event["event_id"] for event in events]
        assert shipment["event_id"] in event_ids
        assert shipment["lines"] == events[0]["lines"]
        for event_id in event_ids:
            # The event that created the shipment reserved; the other one was a logical duplicate.
            expected = "reserved" if event_id == shipment["event_id"] else "logical_duplicate"
            assert_completed(aws, inbox, event_id, expected)
    aws.assert_dlq_empty()


SCARCE_STOCK = 12


def test_concurrent_orders_on_scarce_stock_ship_or_reject_each_order_exactly_once(
    aws: AppState,
) -> None:
    """Not enough stock for everyone: racing containers decide ship or reject per order, and
    every order ends with exactly one of the two, matching its inbox result and the stock."""
    aws.seed_stock(dict.fromkeys(HOT_SKUS, SCARCE_STOCK))
    modules = [load_function("order_events") for _ in range(THREADS)]
    rng = random.Random(7)
    events = _round_events(rng, 0)
    batches = _overlapping_batches(rng, events)
    run_concurrently([_container(m, b) for m, b in zip(modules, batches, strict=True)])

    by_order: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        by_order[event["order_id"]].append(event)
    records = aws.order_records()
    inbox = aws.inbox_records(ORDER_EVENTS)
    assert set(inbox) == {event["event_id"] for event in events}
    reserved: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    for order_id, order_events in by_order.items():
        kinds = [kind for (oid, kind) in records if oid == order_id]
        assert len(kinds) == 1, f"{order_id}: {kinds}"  # shipped or rejected, never both
        decided = records[(order_id, kinds[0])]
        for event in order_events:
            result = json.loads(inbox[event["event_id"]]["result"])["outcome"]
            if event["event_id"] != decided["event_id"]:
                assert result == "logical_duplicate"
            elif kinds[0] == "SHIPMENT":
                assert result == "reserved"
            else:
                assert result == "rejected"
                assert decided["reason"] == "insufficient_stock"
            outcomes[result] += 1
        if kinds[0] == "SHIPMENT":
            for line in order_events[0]["lines"]:
                reserved[line["sku"]] += line["qty"]
    assert outcomes["reserved"] > 0
    assert outcomes["rejected"] > 0  # the stock really was too scarce for everyone
    for sku in HOT_SKUS:
        available, held = aws.stock(sku) or (-1, -1)
        assert held == reserved[sku]
        assert available == SCARCE_STOCK - reserved[sku] >= 0
    aws.assert_dlq_empty()
