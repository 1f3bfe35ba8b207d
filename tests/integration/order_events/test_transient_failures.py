"""Transaction conflicts and throttling are transient: retried, never taken for a duplicate or
for poison; what never clears is reported for redelivery with no partial effects (DynamoDB Local).

DynamoDB Local serialises transactions (it never answers `TransactionConflict` itself), so the
conflict and throttling answers are injected at the HTTP layer of the consumer's own client
(`before-send`): botocore parses them, and retries what it retries, exactly as with real ones.
Real contention (other writers hammering the same SKU items while the consumer commits) runs
against DynamoDB Local unchanged.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from typing import Any

import pytest

from devkit.app_state import ORDER_EVENTS, AppState
from devkit.emf import emf_records
from devkit.events import delivered_again, failed_ids, sqs_event, sqs_record
from devkit.handlers import load_function, process
from devkit.meters import RequestMeter
from devkit.payloads import order
from lambda_inbox import Outcome
from lambda_inbox_tools.testing.context import FakeLambdaContext
from lambda_inbox_tools.testing.faults import (
    FaultInjector,
    cancelled,
    everywhere,
    on_item,
    throttling,
)

pytestmark = pytest.mark.integration

#: The consumer's default RetryPolicy.max_attempts.
MAX_ATTEMPTS = 6


def _batch() -> list[dict[str, Any]]:
    """Three orders on distinct SKUs: they share one group-commit transaction."""
    return [
        sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 2})),
        sqs_record(order("evt-2", "ord-2", {"SKU-BLUE-CAP": 1, "SKU-GREEN-PEN": 1})),
        sqs_record(order("evt-3", "ord-3", {"SKU-YELLOW-HAT": 3})),
    ]


def _seed(env: AppState) -> None:
    env.seed_stock(
        {"SKU-RED-MUG": 10, "SKU-BLUE-CAP": 10, "SKU-GREEN-PEN": 10, "SKU-YELLOW-HAT": 10}
    )


def _assert_committed_once(env: AppState) -> None:
    assert env.stock("SKU-RED-MUG") == (8, 2)
    assert env.stock("SKU-BLUE-CAP") == (9, 1)
    assert env.stock("SKU-GREEN-PEN") == (9, 1)
    assert env.stock("SKU-YELLOW-HAT") == (7, 3)
    assert set(env.order_records()) == {(f"ord-{n}", "SHIPMENT") for n in (1, 2, 3)}
    inbox = env.inbox_records(ORDER_EVENTS)
    assert set(inbox) == {"evt-1", "evt-2", "evt-3"}
    assert {record["status"] for record in inbox.values()} == {"COMPLETED"}


def _assert_untouched(env: AppState) -> None:
    for sku in ("SKU-RED-MUG", "SKU-BLUE-CAP", "SKU-GREEN-PEN", "SKU-YELLOW-HAT"):
        assert env.stock(sku) == (10, 0)
    assert env.order_records() == {}
    assert env.inbox_records(ORDER_EVENTS) == {}


# ---- TransactionConflict ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "item",
    ["SKU#SKU-BLUE-CAP", f"{ORDER_EVENTS}#evt-2"],
    ids=["conflict-on-a-stock-item", "conflict-on-the-inbox-record"],
)
def test_transaction_conflicts_are_retried_and_end_committed(aws: AppState, item: str) -> None:
    _seed(aws)
    module = load_function("order_events")
    meter = RequestMeter(module.consumer.dynamodb)
    faults = FaultInjector(
        module.consumer.dynamodb, cancelled(on_item("TransactionConflict", item)), times=3
    )
    results = process(module.consumer, sqs_event(*_batch()))

    assert faults.injected == 3
    # The culprit and its innocent bystanders are all retried; none is taken for a duplicate.
    assert [result.outcome for result in results] == [Outcome.COMMITTED] * 3
    # Every attempt still groups the three: 3 inbox puts + 4, 5 and 4 domain actions (each
    # order's stock, shipment, rejection check and notification request).
    assert meter.sizes == [16] * 4
    assert len(set(meter.tokens)) == 4  # each retry is a new request (fresh inbox timestamps)
    _assert_committed_once(aws)
    aws.assert_dlq_empty()


def test_conflicts_that_never_clear_are_reported_failed_without_effects(
    aws: AppState,
) -> None:
    _seed(aws)
    batch = _batch()
    module = load_function("order_events")
    faults = FaultInjector(
        module.consumer.dynamodb, cancelled(everywhere("TransactionConflict")), times=None
    )
    results = process(module.consumer, sqs_event(*batch))
    assert [result.outcome for result in results] == [Outcome.FAILED] * 3
    assert {result.error_code for result in results} == {"retries_exhausted"}
    assert faults.injected == MAX_ATTEMPTS
    response = module.handler(sqs_event(*(delivered_again(r) for r in batch)), None)
    assert failed_ids(response) == [record["messageId"] for record in batch]
    _assert_untouched(aws)
    aws.assert_dlq_empty()

    # Once the contention is gone, SQS redelivers them and they commit once.
    recovered = process(
        load_function("order_events").consumer, sqs_event(*(delivered_again(r) for r in batch))
    )
    assert [result.outcome for result in recovered] == [Outcome.COMMITTED] * 3
    _assert_committed_once(aws)


def test_one_message_conflicting_does_not_hold_back_the_others_forever(
    aws: AppState,
) -> None:
    """evt-2's stock item is in conflict every time: evt-2 fails after its retries, the others
    (bystanders in the same group at first) commit; nothing is misclassified."""
    _seed(aws)
    batch = _batch()
    module = load_function("order_events")
    FaultInjector(
        module.consumer.dynamodb,
        cancelled(on_item("TransactionConflict", "SKU#SKU-GREEN-PEN")),
        times=None,
    )
    results = process(module.consumer, sqs_event(*batch))
    assert [(r.outcome, r.error_code) for r in results] == [
        (Outcome.COMMITTED, None),
        (Outcome.FAILED, "retries_exhausted"),
        (Outcome.COMMITTED, None),
    ]
    assert aws.stock("SKU-BLUE-CAP") == (10, 0)
    assert aws.stock("SKU-GREEN-PEN") == (10, 0)
    assert set(aws.inbox_records(ORDER_EVENTS)) == {"evt-1", "evt-3"}
    assert set(aws.order_records()) == {("ord-1", "SHIPMENT"), ("ord-3", "SHIPMENT")}
    aws.assert_dlq_empty()

    recovered = process(
        load_function("order_events").consumer, sqs_event(*(delivered_again(r) for r in batch))
    )
    assert [r.outcome for r in recovered] == [
        Outcome.DUPLICATE,
        Outcome.COMMITTED,
        Outcome.DUPLICATE,
    ]
    _assert_committed_once(aws)


# ---- throttling ---------------------------------------------------------------------------------


def test_http_throttling_beyond_botocore_retries_is_retried_until_committed(
    aws: AppState, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(aws)
    module = load_function("order_events")
    meter = RequestMeter(module.consumer.dynamodb)
    # The consumer's client makes 1 + 3 attempts per call (retries max_attempts=3): 4 throttled
    # answers exhaust botocore's retries of the first call.
    faults = FaultInjector(module.consumer.dynamodb, throttling, times=4)
    capsys.readouterr()
    response = module.handler(sqs_event(*_batch()), None)

    assert response == {"batchItemFailures": []}
    assert faults.injected == 4
    assert faults.sends == 5  # 4 throttled, then 1 through to DynamoDB Local
    # The engine resent the very same request (same token) after the throttled call.
    assert len(meter.transactions) == 2
    assert meter.tokens[0] == meter.tokens[1]
    (metrics,) = emf_records(capsys.readouterr().out)
    assert metrics["Transactions"] == [2.0]
    assert metrics["TransactionsTransient"] == [1.0]
    assert metrics["TransactionsCancelled"] == [0.0]
    assert metrics["MessagesCommitted"] == [3.0]
    _assert_committed_once(aws)
    aws.assert_dlq_empty()


def test_throttling_cancellation_reasons_are_retried_until_committed(
    aws: AppState,
) -> None:
    _seed(aws)
    module = load_function("order_events")
    faults = FaultInjector(
        module.consumer.dynamodb, cancelled(everywhere("ThrottlingError")), times=2
    )
    results = process(module.consumer, sqs_event(*_batch()))
    assert faults.injected == 2
    assert [result.outcome for result in results] == [Outcome.COMMITTED] * 3
    _assert_committed_once(aws)
    aws.assert_dlq_empty()


def test_throttling_that_never_stops_is_reported_failed_without_effects(
    aws: AppState,
) -> None:
    _seed(aws)
    batch = _batch()
    module = load_function("order_events")
    faults = FaultInjector(
        module.consumer.dynamodb, cancelled(everywhere("ThrottlingError")), times=None
    )
    response = module.handler(sqs_event(*batch), None)
    assert failed_ids(response) == [record["messageId"] for record in batch]
    assert faults.injected == MAX_ATTEMPTS
    results = process(module.consumer, sqs_event(*(delivered_again(r) for r in batch)))
    assert {(r.outcome, r.error_code) for r in results} == {(Outcome.FAILED, "retries_exhausted")}
    _assert_untouched(aws)
    aws.assert_dlq_empty()


def test_http_throttling_that_never_stops_ends_at_the_lambda_deadline(
    aws: AppState,
) -> None:
    _seed(aws)
    batch = _batch()
    module = load_function("order_events")
    faults = FaultInjector(module.consumer.dynamodb, throttling, times=None)
    started = time.monotonic()
    results = process(module.consumer, sqs_event(*batch), FakeLambdaContext(3300))
    elapsed = time.monotonic() - started
    # botocore retried (standard mode sleeps a jittered 0-1 s, then 0-2 s, between its three
    # attempts, so whether the third fits in the time left is chance); the batch ended on time.
    assert faults.injected >= 2
    assert elapsed < 3.3
    assert {r.outcome for r in results} == {Outcome.FAILED}
    assert {r.error_code for r in results} <= {"deadline", "retries_exhausted"}
    _assert_untouched(aws)
    aws.assert_dlq_empty()


# ---- real contention ------------------------------------------------------------------------

HOT = ("SKU-HOT-1", "SKU-HOT-2")
HOT_STOCK = 1_000
CONTENDERS = 3
ORDER_BATCHES = 6
MAX_REDELIVERIES = 10


def test_orders_commit_exactly_while_other_writers_hammer_the_same_items(
    aws: AppState,
) -> None:
    """Restocks (UpdateItem and TransactWriteItems) race the consumer on the same SKU items."""
    aws.seed_stock(dict.fromkeys(HOT, HOT_STOCK))
    module = load_function("order_events")
    meter = RequestMeter(module.consumer.dynamodb)
    client = aws.dynamodb
    domain = aws.domain
    stop = threading.Event()
    restocked = [Counter[str]() for _ in range(CONTENDERS)]
    errors: list[BaseException] = []

    def restock(worker: int) -> None:
        try:
            n = 0
            while not stop.is_set():
                sku = HOT[n % len(HOT)]
                key = {"pk": {"S": f"SKU#{sku}"}, "sk": {"S": "STOCK"}}
                update = {
                    "TableName": domain,
                    "Key": key,
                    "UpdateExpression": "ADD available :n",
                    "ExpressionAttributeValues": {":n": {"N": "1"}},
                }
                if worker % 2:
                    client.update_item(**update)  # type: ignore[arg-type]
                else:
                    log = {"pk": {"S": f"RESTOCK#{uuid.uuid4()}"}, "sk": {"S": sku}}
                    client.transact_write_items(
                        TransactItems=[
                            {"Update": update},  # type: ignore[typeddict-item]
                            {"Put": {"TableName": domain, "Item": log}},
                        ]
                    )
                restocked[worker][sku] += 1
                n += 1
        except BaseException as error:
            errors.append(error)

    contenders = [threading.Thread(target=restock, args=(w,)) for w in range(CONTENDERS)]
    for thread in contenders:
        thread.start()
    outcomes: Counter[Outcome] = Counter()
    expected_reserved: Counter[str] = Counter()
    try:
        for batch_number in range(ORDER_BATCHES):
            records = []
            for index in range(5):
                lines = {HOT[0]: 1 + index % 2, HOT[1]: 1} if index % 3 else {HOT[1]: 2}
                event_id = f"evt-{batch_number}-{index}"
                records.append(sqs_record(order(event_id, f"ord-{batch_number}-{index}", lines)))
                expected_reserved.update(lines)
            pending = records
            for _ in range(MAX_REDELIVERIES):
                results = process(module.consumer, sqs_event(*pending))
                outcomes.update(result.outcome for result in results)
                retry = {r.message.item_identifier for r in results if r.outcome is Outcome.FAILED}
                pending = [delivered_again(rec) for rec in pending if rec["messageId"] in retry]
                if not pending:
                    break
            assert pending == []
    finally:
        stop.set()
        for thread in contenders:
            thread.join(timeout=30)
    assert errors == []

    # Transient trouble may fail a delivery (then redelivered), never make it a duplicate or poison.
    assert set(outcomes) <= {Outcome.COMMITTED, Outcome.FAILED}
    assert outcomes[Outcome.COMMITTED] == ORDER_BATCHES * 5
    added = sum(restocked, Counter[str]())
    assert sum(added.values()) > 0
    for sku in HOT:
        assert aws.stock(sku) == (
            HOT_STOCK + added[sku] - expected_reserved[sku],
            expected_reserved[sku],
        )
    assert len(aws.inbox_records(ORDER_EVENTS)) == ORDER_BATCHES * 5
    shipments = [key for key in aws.order_records() if key[1] == "SHIPMENT"]
    assert len(shipments) == ORDER_BATCHES * 5
    # Whatever DynamoDB answered, nothing was a domain condition failure or a validation error.
    assert not set(meter.cancellation_codes) & {"ConditionalCheckFailed", "ValidationError"}
    aws.assert_dlq_empty()
