"""Hot keys on DynamoDB Local: commuting BALANCE updates of many payments merge into one action
per transaction, with the request budget of docs/PERFORMANCE.md, exact balances, and the right
outcome for each message when a merged transaction is cancelled."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import kafka_event, kafka_record
from devkit.handlers import load_function
from devkit.meters import RequestMeter, assert_no_item_twice_per_transaction
from devkit.payloads import payment
from lambda_inbox import Outcome
from lambda_inbox.wire import parse_kafka_event
from lambda_inbox_tools.testing.faults import FaultInjector, cancelled

pytestmark = pytest.mark.integration

PARTITIONS = 10


def payments(
    records: int, customers: int, *, first: int = 0
) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """Payments spread so each partition holds every customer; the balances they produce."""
    made = []
    expected: dict[str, tuple[int, int]] = {}
    for n in range(first, first + records):
        customer = f"hot-{n % customers:04d}"
        amount = 1 + n % 89
        made.append(kafka_record((n // customers) % PARTITIONS, n, payment(n, customer, amount)))
        cents, count = expected.get(customer, (0, 0))
        expected[customer] = (cents + amount, count + 1)
    return kafka_event(made), expected


def balance_key(customer: str) -> str:
    return json.dumps({"pk": {"S": f"CUSTOMER#{customer}"}, "sk": {"S": "BALANCE"}}, sort_keys=True)


def update_key(item: dict[str, Any]) -> str:
    return json.dumps(item.get("Update", {}).get("Key"), sort_keys=True)


def test_a_thousand_payments_within_the_request_budget(aws: AppState) -> None:
    """Ten hot customers in every partition (1,000 distinct ones:
    test_large_batch.py::test_thousand_record_batch)."""
    module = load_function("payment_events")
    meter = RequestMeter(module.consumer.dynamodb)  # counts `before-call` events
    event, expected = payments(1000, 10)

    assert module.handler(event, None) == {"batchItemFailures": []}

    counts = meter.counts()
    assert sum(counts.values()) <= 35, counts  # docs/PERFORMANCE.md: the Kafka request budget
    assert set(counts) == {"TransactWriteItems"}  # new offsets: no read first
    assert_no_item_twice_per_transaction(meter)
    for transaction in meter.transactions:
        assert len(transaction["TransactItems"]) <= 100
    assert aws.balances() == expected
    assert len(aws.payment_items()) == 1000

    meter.clear()  # the same batch again in this execution environment: offsets it has seen
    assert module.handler(event, None) == {"batchItemFailures": []}
    assert meter.counts() == Counter({"BatchGetItem": 10})
    assert aws.balances() == expected


def test_a_logical_duplicate_and_a_throttled_merged_update_keep_every_outcome_right(
    aws: AppState,
) -> None:
    module = load_function("payment_events")
    # pay-7 is already recorded under another event: evt-7 is a logical duplicate (its payment
    # put's condition fails inside a merged transaction) and must not credit anyone.
    seed = kafka_event([kafka_record(9, 1, payment(99_999, "hot-0007", 1_000, payment_id="pay-7"))])
    assert module.handler(seed, None) == {"batchItemFailures": []}
    event, expected = payments(300, 10)
    cents, count = expected["hot-0007"]
    expected["hot-0007"] = (cents - (1 + 7 % 89) + 1_000, count)  # evt-7 credits nothing

    # The merged BALANCE update of hot-0003 is throttled in its first two transactions.
    hot = balance_key("hot-0003")

    def throttled(items: list[dict[str, Any]]) -> list[str] | None:
        keys = [update_key(item) for item in items]
        if hot not in keys:
            return None
        return ["ThrottlingError" if key == hot else "None" for key in keys]

    faults = FaultInjector(module.consumer.dynamodb, cancelled(throttled), times=2)
    meter = RequestMeter(module.consumer.dynamodb)
    results = module.consumer.process(parse_kafka_event(event))

    assert faults.injected == 2
    outcomes = {result.message_key: result.outcome for result in results}
    assert outcomes.pop("evt-7") is Outcome.BUSINESS_OUTCOME
    assert set(outcomes.values()) == {Outcome.COMMITTED}
    assert aws.balances() == expected
    assert "pay-7" in aws.payment_items()
    assert aws.payment_items()["pay-7"]["event_id"] == "evt-99999"
    merged = [
        item["Update"]
        for transaction in meter.transactions
        for item in transaction["TransactItems"]
        if update_key(item) == hot
    ]
    assert any(int(update["ExpressionAttributeValues"][":one"]["N"]) > 1 for update in merged)

    # Redelivery of the whole batch changes nothing.
    again = module.consumer.process(parse_kafka_event(event))
    assert {result.outcome for result in again} == {Outcome.DUPLICATE}
    assert aws.balances() == expected


def test_a_refused_merged_update_is_retried_per_message(aws: AppState) -> None:
    """DynamoDB refuses the merged update of one customer once (as it would a sum out of the
    number range): its owners are retried alone, where each is judged on its own writes."""
    module = load_function("payment_events")
    event, expected = payments(40, 4)
    hot = balance_key("hot-0001")
    sizes: list[int] = []

    def refused(items: list[dict[str, Any]]) -> list[str] | None:
        keys = [update_key(item) for item in items]
        if hot not in keys:
            return None
        sizes.append(len(items))
        return ["ValidationError" if key == hot else "None" for key in keys]

    faults = FaultInjector(module.consumer.dynamodb, cancelled(refused), times=1)
    meter = RequestMeter(module.consumer.dynamodb)
    results = module.consumer.process(parse_kafka_event(event))

    assert faults.injected == 1 and sizes[0] > 3  # a merged transaction was refused
    assert {result.outcome for result in results} == {Outcome.COMMITTED}
    assert aws.balances() == expected
    alone = [t for t in meter.transactions if len(t["TransactItems"]) == 3]
    assert len(alone) == 10  # hot-0001's ten payments, one transaction each
    assert aws.dead_letter_count() == 0
