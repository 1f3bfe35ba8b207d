"""A 1,000-record MSK batch on DynamoDB Local: balances exact, requests bounded.

Timing is measured in benchmarks/kafka_batch.py, never asserted here.
"""

from __future__ import annotations

from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import kafka_event, kafka_record
from devkit.handlers import load_function
from devkit.meters import RequestMeter, assert_no_item_twice_per_transaction
from devkit.payloads import payment

pytestmark = pytest.mark.integration

RECORDS = 1000
PARTITIONS = 10


def thousand_payments(customers: int) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """1,000 payments over 10 partitions, customer n % customers; the expected balances."""
    records = []
    expected: dict[str, tuple[int, int]] = {}
    for n in range(RECORDS):
        customer = f"cust-{n % customers:04d}"
        amount = 1 + n % 97
        records.append(
            kafka_record(n % PARTITIONS, 1000 + n // PARTITIONS, payment(n, customer, amount))
        )
        cents, count = expected.get(customer, (0, 0))
        expected[customer] = (cents + amount, count + 1)
    return kafka_event(records), expected


@pytest.mark.parametrize(
    ("customers", "transactions"),
    [
        # 10 hot BALANCE items (customer n % 10 is partition n % 10), updates merged: one wave,
        # in delivery order; ~49 messages per transaction (49 inbox puts + 49 payment puts + 1-2
        # merged BALANCE updates <= 100 actions) -> 21.
        pytest.param(10, 21, id="10-hot-customers"),
        # 1,000 distinct customers: one wave, 33 messages (99 actions) per transaction -> 31.
        pytest.param(1000, 31, id="1000-distinct-customers"),
    ],
)
def test_thousand_record_batch(aws: AppState, customers: int, transactions: int) -> None:
    module = load_function("payment_events")
    meter = RequestMeter(module.consumer.dynamodb)
    event, expected = thousand_payments(customers)

    assert module.handler(event, None) == {"batchItemFailures": []}

    counts = meter.counts()
    assert counts == {"TransactWriteItems": transactions}  # new offsets: no read first
    assert sum(counts.values()) <= (
        35 if customers == 10 else 42
    )  # docs/PERFORMANCE.md: the Kafka request budget
    assert_no_item_twice_per_transaction(meter)
    assert all(len(t["TransactItems"]) <= 100 for t in meter.transactions)
    assert aws.balances() == expected
    assert len(aws.payment_items()) == RECORDS

    # The same batch again (offsets this execution environment has seen): 1,000 duplicates for
    # 10 reads of 100 keys and no write.
    meter.clear()
    assert module.handler(event, None) == {"batchItemFailures": []}
    assert meter.counts() == {"BatchGetItem": RECORDS // 100}
    assert aws.balances() == expected
