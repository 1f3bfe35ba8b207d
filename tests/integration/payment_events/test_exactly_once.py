"""payment-events on DynamoDB Local: every PaymentCaptured applies exactly once, whatever the
redeliveries, producer retries, hot customers, concurrent invocations or crashes."""

from __future__ import annotations

import base64
import functools
import json
from types import ModuleType
from typing import Any

import pytest

from devkit.app_state import PAYMENT_EVENTS, AppState
from devkit.events import event_after, failed_offsets, kafka_event, kafka_record, load_event
from devkit.handlers import deliver_until_acknowledged, load_function, run_concurrently
from devkit.meters import RequestMeter, assert_no_item_twice_per_transaction
from devkit.payloads import payment
from lambda_inbox import Outcome
from lambda_inbox.wire import parse_kafka_event
from lambda_inbox_tools.testing.faults import (
    FaultInjector,
    LambdaCrashed,
    cancelled,
    crash_on,
    lose_first_response,
    on_item,
)

pytestmark = pytest.mark.integration

MAX_REDELIVERIES = 30


def deliver_until_clean(module: ModuleType, event: dict[str, Any]) -> int:
    """Deliver, then redeliver what the response reports (as Lambda does); returns rounds."""
    return deliver_until_acknowledged(module.handler, event, max_deliveries=MAX_REDELIVERIES)


MULTI_PARTITION_BALANCES = {
    "cust-001": (6743, 3),
    "cust-002": (4449, 2),
    "cust-003": (2046, 2),
    "cust-004": (249, 1),
    "cust-005": (3149, 1),
}


def test_the_same_batch_redelivered_applies_once_and_costs_one_read(
    aws: AppState,
) -> None:
    module = load_function("payment_events")
    meter = RequestMeter(module.consumer.dynamodb)
    event = load_event("msk-payment-multi-partition.json")

    assert module.handler(event, None) == {"batchItemFailures": []}
    first = meter.counts()
    assert "BatchGetItem" not in first  # new offsets: the commit finds any duplicate
    assert first["TransactWriteItems"] >= 1
    assert_no_item_twice_per_transaction(meter)

    for _ in range(2):  # redelivered (e.g. after a timeout of the whole invocation)
        meter.clear()
        assert module.handler(event, None) == {"batchItemFailures": []}
        assert meter.counts() == {"BatchGetItem": 1}  # duplicates: one read, zero writes

    # Another container receiving it (offsets it has not seen: no read, the commit finds them)
    # applies nothing either.
    other = load_function("payment_events")
    assert other.handler(event, None) == {"batchItemFailures": []}
    for customer, expected in MULTI_PARTITION_BALANCES.items():
        assert aws.balance(customer) == expected
    assert len(aws.payment_items()) == 9
    assert set(aws.inbox_statuses().values()) == {"COMPLETED"}


def test_producer_retries_at_new_offsets_are_duplicates(aws: AppState) -> None:
    module = load_function("payment_events")
    first = kafka_event(
        kafka_record(n % 3, 100 + n, payment(n, f"c{n % 4}", 10 + n)) for n in range(12)
    )
    assert module.handler(first, None) == {"batchItemFailures": []}
    # The producer retried events 4..11 (same event_id, new offsets), interleaved with new ones.
    retried = [kafka_record(n % 3, 200 + n, payment(n, f"c{n % 4}", 10 + n)) for n in range(4, 12)]
    fresh = [kafka_record(n % 3, 300 + n, payment(n, f"c{n % 4}", 10 + n)) for n in range(12, 16)]
    second = kafka_event(retried + fresh)
    results = module.consumer.process(parse_kafka_event(second))
    outcomes = {result.message_key: result.outcome for result in results}
    assert {outcomes[f"evt-{n}"] for n in range(4, 12)} == {Outcome.DUPLICATE}
    assert {outcomes[f"evt-{n}"] for n in range(12, 16)} == {Outcome.COMMITTED}

    for c in range(4):
        amounts = [10 + n for n in range(16) if n % 4 == c]
        assert aws.balance(f"c{c}") == (sum(amounts), len(amounts))
    assert len(aws.payment_items()) == 16


def test_hot_customer_payments_share_one_transaction_and_one_merged_update(aws: AppState) -> None:
    module = load_function("payment_events")
    meter = RequestMeter(module.consumer.dynamodb)
    event = load_event("msk-payment-hot-customer.json")
    # Some other customers in the same batch, interleaved with the hot one.
    event["records"]["payments-2"] = [
        kafka_record(2, 700 + n, payment(9000 + n, f"cust-cold-{n}", 111)) for n in range(10)
    ]

    assert module.handler(event, None) == {"batchItemFailures": []}

    assert aws.balance("cust-042") == (46030, 20)
    assert sum(1 for pid in aws.payment_items() if pid.startswith("pay-03")) == 20
    for n in range(10):
        assert aws.balance(f"cust-cold-{n}") == (111, 1)
    assert_no_item_twice_per_transaction(meter)
    # The 20 updates of one BALANCE item commute: one transaction, one merged action for them;
    # the cold customers ride along.
    hot_balance = json.dumps(
        {"pk": {"S": "CUSTOMER#cust-042"}, "sk": {"S": "BALANCE"}}, sort_keys=True
    )
    transactions = meter.transactions
    with_hot = [
        t
        for t in transactions
        if any(
            json.dumps(a.get("Update", {}).get("Key"), sort_keys=True) == hot_balance
            for a in t["TransactItems"]
        )
    ]
    assert len(with_hot) == 1
    assert len(transactions) == 1
    merged = [
        action["Update"]
        for action in with_hot[0]["TransactItems"]
        if json.dumps(action.get("Update", {}).get("Key"), sort_keys=True) == hot_balance
    ]
    assert len(merged) == 1
    assert merged[0]["ExpressionAttributeValues"] == {
        ":amount": {"N": "46030"},
        ":one": {"N": "20"},
    }
    assert meter.counts() == {"TransactWriteItems": 1}  # 30 new payments: one request


def test_concurrent_invocations_on_overlapping_batches_apply_each_event_once(
    aws: AppState,
) -> None:
    """Four containers receive overlapping windows of the same three partitions at once."""
    customers = 5  # few customers: BALANCE items are contended across invocations
    events_per_partition = 40
    all_records = [
        kafka_record(p, o, payment(p * 1000 + o, f"cc-{(p + o) % customers}", 1 + (p * 7 + o) % 50))
        for p in range(3)
        for o in range(events_per_partition)
    ]
    windows = [(0, 25), (10, 35), (15, 40), (0, 40)]
    batches = [
        kafka_event(r for r in all_records if start <= r["offset"] < end) for start, end in windows
    ]
    modules = [load_function("payment_events") for _ in batches]
    run_concurrently(
        [
            functools.partial(deliver_until_clean, module, batch)
            for module, batch in zip(modules, batches, strict=True)
        ]
    )

    expected: dict[str, tuple[int, int]] = {}
    for raw in all_records:
        body = json.loads(base64.b64decode(raw["value"]))
        cents, count = expected.get(body["customer_id"], (0, 0))
        expected[body["customer_id"]] = (cents + body["amount_cents"], count + 1)
    for customer, balance in expected.items():
        assert aws.balance(customer) == balance
    assert len(aws.payment_items()) == len(all_records)
    statuses = aws.inbox_statuses()
    assert len(statuses) == len(all_records)
    assert set(statuses.values()) == {"COMPLETED"}


def crash_batch() -> dict[str, Any]:
    # Hot customer plus cold ones: their BALANCE updates commute, so one wave, one transaction.
    return kafka_event(
        [kafka_record(0, o, payment(o, "hot", 100 + o)) for o in range(6)]
        + [kafka_record(1, o, payment(100 + o, f"cold-{o}", 7)) for o in range(6)]
    )


def assert_crash_batch_applied_once(aws: AppState) -> None:
    assert aws.balance("hot") == (sum(100 + o for o in range(6)), 6)
    for o in range(6):
        assert aws.balance(f"cold-{o}") == (7, 1)
    assert len(aws.payment_items()) == 12
    assert set(aws.inbox_statuses().values()) == {"COMPLETED"}


def test_crash_before_the_commit_then_redelivery_applies_once(aws: AppState) -> None:
    module = load_function("payment_events")
    crash_on(module.consumer.dynamodb, "before-call")
    event = crash_batch()
    with pytest.raises(LambdaCrashed):
        module.handler(event, None)
    # The batch is one transaction (the hot payments merged), which never reached DynamoDB:
    # nothing is written.
    assert aws.inbox_statuses() == {}
    assert aws.balance("hot") == (0, 0)

    # Lambda retries the whole batch, maybe in another container.
    assert deliver_until_clean(load_function("payment_events"), event) == 1
    assert_crash_batch_applied_once(aws)


def test_crash_after_the_commit_then_redelivery_applies_once(aws: AppState) -> None:
    module = load_function("payment_events")
    crash_on(module.consumer.dynamodb, "after-call")
    event = crash_batch()
    with pytest.raises(LambdaCrashed):
        module.handler(event, None)
    # DynamoDB committed the batch's one transaction before the process died.
    committed = [key for key, status in aws.inbox_statuses().items() if status == "COMPLETED"]
    assert sorted(committed) == sorted(
        [*(f"evt-{o}" for o in range(6)), *(f"evt-{100 + o}" for o in range(6))]
    )
    assert aws.balance("hot") == (sum(100 + o for o in range(6)), 6)

    redelivered = load_function("payment_events")
    results = redelivered.consumer.process(parse_kafka_event(event))
    outcomes = {result.message_key: result.outcome for result in results}
    assert {outcomes[key] for key in committed} == {Outcome.DUPLICATE}
    assert Outcome.FAILED not in outcomes.values()
    assert_crash_batch_applied_once(aws)


def test_timeout_after_commit_is_retried_with_the_same_token(aws: AppState) -> None:
    """The response is lost after DynamoDB committed: the resend (same ClientRequestToken)
    succeeds without applying twice, and the message is COMMITTED, not a duplicate."""
    module = load_function("payment_events")
    meter = RequestMeter(module.consumer.dynamodb)
    lost = lose_first_response(module.consumer.dynamodb)

    event = kafka_event([kafka_record(0, 1, payment(1, "timeout", 500))])
    results = module.consumer.process(parse_kafka_event(event))
    assert [result.outcome for result in results] == [Outcome.COMMITTED]
    assert lost == [200]
    tokens = meter.tokens
    assert len(tokens) == 2 and tokens[0] == tokens[1]
    assert aws.balance("timeout") == (500, 1)


def test_poison_on_local_dynamodb_goes_to_the_dlq_and_the_partition_continues(
    aws: AppState,
) -> None:
    module = load_function("payment_events")
    event = load_event("msk-payment-poison.json")
    assert module.handler(event, None) == {"batchItemFailures": []}
    assert aws.dead_letter_count() == 3
    assert set(aws.payment_items()) == {"pay-0201", "pay-0205"}
    # The whole batch redelivered: the committed ones are duplicates, the poison stays poison.
    assert failed_offsets(module.handler(event, None)) == []
    assert set(aws.payment_items()) == {"pay-0201", "pay-0205"}
    assert aws.balance("cust-001") == (1850, 1)
    statuses = aws.inbox_statuses()
    assert statuses["payments-0-201"] == statuses["evt-pay-0204"] == "FAILED"


def test_a_partition_stuck_on_conflicts_is_reported_from_the_failed_offset(
    aws: AppState,
) -> None:
    """Transactions touching one customer's BALANCE are cancelled with TransactionConflict (a
    synthetic DynamoDB answer, below the inbox) until the outage ends: that record and every later
    record of its partition are reported and left unprocessed; the other partition commits."""
    module = load_function("payment_events")
    blocked = on_item("TransactionConflict", "CUSTOMER#blocked", "BALANCE")
    outage = FaultInjector(module.consumer.dynamodb, cancelled(blocked), times=None)
    event = kafka_event(
        [
            kafka_record(0, 1, payment(1, "ok-a", 10)),
            kafka_record(0, 2, payment(2, "blocked", 20)),
            kafka_record(0, 3, payment(3, "ok-b", 30)),
            kafka_record(0, 4, payment(4, "blocked", 40)),
            kafka_record(1, 1, payment(5, "ok-c", 50)),
            kafka_record(1, 2, payment(6, "ok-a", 60)),
        ]
    )
    results = module.consumer.process(parse_kafka_event(event))
    assert [(r.message.delivery_id, r.outcome, r.error_code) for r in results] == [
        ("payments-0-1", Outcome.COMMITTED, None),
        ("payments-0-2", Outcome.FAILED, "retries_exhausted"),
        ("payments-0-3", Outcome.SKIPPED, None),
        ("payments-0-4", Outcome.SKIPPED, None),
        ("payments-1-1", Outcome.COMMITTED, None),
        ("payments-1-2", Outcome.COMMITTED, None),
    ]
    assert aws.balance("ok-a") == (70, 2)
    assert aws.balance("ok-c") == (50, 1)
    assert aws.balance("ok-b") == (0, 0)
    assert aws.balance("blocked") == (0, 0)
    assert set(aws.inbox_statuses()) == {"evt-1", "evt-5", "evt-6"}

    response = module.handler(event, None)  # the same again: still stuck, same report
    assert failed_offsets(response) == [("payments-0", 2), ("payments-0", 3), ("payments-0", 4)]

    outage.active = False
    again = event_after(event, response)
    assert again is not None
    assert deliver_until_clean(module, again) == 1
    assert aws.balance("blocked") == (60, 2)
    assert aws.balance("ok-b") == (30, 1)
    assert aws.balance("ok-a") == (70, 2)
    assert len(aws.payment_items()) == 6


def test_a_follower_of_a_failed_leader_blocks_its_own_partition(aws: AppState) -> None:
    """evt-1 is delivered on two partitions. Its first delivery cannot commit (its inbox put is
    cancelled with TransactionConflict until the outage ends), so its second delivery fails too,
    and the next record of that second partition, which touches the same BALANCE, must not
    commit ahead of it."""
    module = load_function("payment_events")
    stuck = on_item("TransactionConflict", f"{PAYMENT_EVENTS}#evt-1")
    outage = FaultInjector(module.consumer.dynamodb, cancelled(stuck), times=None)
    event = kafka_event(
        [
            kafka_record(0, 1, payment(1, "shared", 100)),  # leader of evt-1: stuck
            kafka_record(1, 5, payment(1, "shared", 100)),  # follower of evt-1
            kafka_record(1, 6, payment(2, "shared", 30)),  # same BALANCE, after the follower
            kafka_record(2, 1, payment(3, "other", 7)),
        ]
    )
    results = module.consumer.process(parse_kafka_event(event))
    assert [(r.message.delivery_id, r.outcome, r.error_code) for r in results] == [
        ("payments-0-1", Outcome.FAILED, "retries_exhausted"),
        ("payments-1-5", Outcome.FAILED, "leader_failed"),
        ("payments-1-6", Outcome.SKIPPED, None),
        ("payments-2-1", Outcome.COMMITTED, None),
    ]
    assert aws.balance("shared") == (0, 0)

    outage.active = False
    assert deliver_until_clean(module, event) == 1
    assert aws.balance("shared") == (130, 2)
    assert aws.balance("other") == (7, 1)
