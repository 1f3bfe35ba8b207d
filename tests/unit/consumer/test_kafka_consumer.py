"""payment-events on Kafka (moto): per-partition failure semantics, poison to the DLQ, replay via SQS.

Concurrency, contention and crash recovery are proven on DynamoDB Local in
tests/integration/payment_events/; here moto gives fast, isolated tables and queues.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

from devkit.app_state import AppState
from devkit.events import (
    PAYMENT_REPLAY_QUEUE_ARN,
    failed_offsets,
    kafka_event,
    kafka_record,
    load_event,
    sqs_event,
    sqs_record,
    sqs_record_from,
    string_attribute,
)
from devkit.payloads import payment
from lambda_inbox import Decide, InboxConsumer, Outcome, PoisonMessage, UnitOfWork
from lambda_inbox.wire import parse_kafka_event, parse_sqs_event

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef


def consumer_failing_on(module: ModuleType, *event_ids: str) -> InboxConsumer[Any]:
    """The real payment-events consumer, except that decide raises for `event_ids`."""

    def decide(payment: Any, uow: UnitOfWork) -> None:
        if payment.event_id in event_ids:
            raise RuntimeError(f"downstream outage while deciding {payment.event_id}")
        module.record_payment(payment, uow)

    return InboxConsumer(
        "payment-events",
        model=module.PaymentCaptured,
        decide=Decide(decide, on_condition_failed=module.skip_logical_duplicate),
        key="event_id",
    )


def attribute(message: MessageTypeDef, name: str) -> str:
    return str(message["MessageAttributes"][name]["StringValue"])


def replay_record(body: str, message_id: str, attributes: dict[str, str] | None = None) -> Any:
    """A message of the SQS replay queue, with String message attributes."""
    return sqs_record(
        body,
        message_id=message_id,
        arn=PAYMENT_REPLAY_QUEUE_ARN,
        message_attributes={name: string_attribute(v) for name, v in (attributes or {}).items()},
    )


def redrive(letters: Iterable[MessageTypeDef]) -> dict[str, Any]:
    """The replay queue's view of dead-lettered messages (what Lambda hands the function)."""
    return sqs_event(
        *(
            sqs_record_from(letter, arn=PAYMENT_REPLAY_QUEUE_ARN, message_id=f"replay-{index}")
            for index, letter in enumerate(letters)
        )
    )


# ---- sample events ------------------------------------------------------------------------------


def test_multi_partition_sample_commits_each_event_once(
    aws: AppState, payment_events: ModuleType
) -> None:
    assert payment_events.handler(load_event("msk-payment-multi-partition.json"), None) == {
        "batchItemFailures": []
    }
    assert aws.balance("cust-001") == (6743, 3)
    assert aws.balance("cust-002") == (4449, 2)
    assert aws.balance("cust-003") == (2046, 2)
    assert aws.balance("cust-004") == (249, 1)
    assert aws.balance("cust-005") == (3149, 1)
    assert set(aws.payment_items()) == {f"pay-{n:04d}" for n in range(101, 110)}
    # The producer retry at offset 43 is a duplicate of offset 41: one inbox record, source 41.
    inbox = aws.inbox_records()
    assert inbox["evt-pay-0105"]["source"] == "payments-1-41"
    assert all(item["status"] == "COMPLETED" for item in inbox.values())


def test_same_batch_redelivered_is_all_duplicates(
    aws: AppState, payment_events: ModuleType
) -> None:
    event = load_event("msk-payment-multi-partition.json")
    payment_events.handler(event, None)
    results = payment_events.consumer.process(parse_kafka_event(event))
    assert {result.outcome for result in results} == {Outcome.DUPLICATE}
    assert aws.balance("cust-001") == (6743, 3)


# "aws:SelfManagedKafka" is how sample events kept by a widely used library spell it.
@pytest.mark.parametrize("source", ["aws:kafka", "SelfManagedKafka", "aws:SelfManagedKafka"])
def test_self_managed_kafka_events_are_handled_too(
    aws: AppState, payment_events: ModuleType, source: str
) -> None:
    event = load_event("msk-payment-single.json")
    event["eventSource"] = source
    assert payment_events.handler(event, None) == {"batchItemFailures": []}
    assert aws.balance("cust-001") == (3149, 1)


# ---- per-partition failure semantics ----------------------------------------------------------


def test_a_failure_reports_the_record_and_every_later_record_of_its_partition_only(
    aws: AppState,
    payment_events: ModuleType,
) -> None:
    event = kafka_event(
        [
            kafka_record(0, 10, payment(1, "cust-a")),
            kafka_record(0, 11, payment(2, "cust-b")),  # fails
            kafka_record(0, 12, payment(3, "cust-c")),  # later, other customer: skipped
            kafka_record(0, 13, payment(4, "cust-a")),  # later, same customer: skipped
            kafka_record(1, 20, payment(5, "cust-b")),  # other partition: continues
            kafka_record(1, 21, payment(6, "cust-d")),
        ]
    )
    consumer = consumer_failing_on(payment_events, "evt-2")
    response = consumer.handle(event)

    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": {"topic-partition": "payments-0", "offset": 11}},
            {"itemIdentifier": {"topic-partition": "payments-0", "offset": 12}},
            {"itemIdentifier": {"topic-partition": "payments-0", "offset": 13}},
        ]
    }
    # Skipped records were not processed: no effects, no inbox record.
    assert set(aws.payment_items()) == {"pay-1", "pay-5", "pay-6"}
    assert set(aws.inbox_records()) == {"evt-1", "evt-5", "evt-6"}
    assert aws.balance("cust-a") == (100, 1)
    assert aws.balance("cust-b") == (100, 1)
    assert aws.balance("cust-c") == (0, 0)
    assert aws.dead_letters() == []

    # Redelivery from the failed offset on (as Lambda does), with the outage over.
    redelivery = kafka_event(
        [
            kafka_record(0, 11, payment(2, "cust-b")),
            kafka_record(0, 12, payment(3, "cust-c")),
            kafka_record(0, 13, payment(4, "cust-a")),
        ]
    )
    assert payment_events.handler(redelivery, None) == {"batchItemFailures": []}
    assert aws.balance("cust-a") == (200, 2)
    assert aws.balance("cust-b") == (200, 2)
    assert aws.balance("cust-c") == (100, 1)


def test_outcomes_distinguish_failed_from_skipped(
    aws: AppState, payment_events: ModuleType
) -> None:
    event = kafka_event(
        [
            kafka_record(2, 5, payment(1)),
            kafka_record(2, 6, payment(2)),
            kafka_record(2, 7, payment(3)),
        ]
    )
    results = consumer_failing_on(payment_events, "evt-2").process(parse_kafka_event(event))
    assert [(r.message.delivery_id, r.outcome, r.error_code) for r in results] == [
        ("payments-2-5", Outcome.COMMITTED, None),
        ("payments-2-6", Outcome.FAILED, "handler_error"),
        ("payments-2-7", Outcome.SKIPPED, None),
    ]


def test_failures_in_two_partitions_are_independent(
    aws: AppState, payment_events: ModuleType
) -> None:
    event = kafka_event(
        [
            kafka_record(0, 1, payment(1, "c1")),
            kafka_record(0, 2, payment(2, "c1")),
            kafka_record(1, 1, payment(3, "c2")),
            kafka_record(1, 2, payment(4, "c2")),
            kafka_record(1, 3, payment(5, "c2")),
            kafka_record(2, 1, payment(6, "c3")),
        ]
    )
    response = consumer_failing_on(payment_events, "evt-1", "evt-4").handle(event)
    assert failed_offsets(response) == [
        ("payments-0", 1),
        ("payments-0", 2),
        ("payments-1", 2),
        ("payments-1", 3),
    ]
    assert set(aws.payment_items()) == {"pay-3", "pay-6"}


def test_poison_is_not_a_failure_and_the_partition_continues(
    aws: AppState, payment_events: ModuleType
) -> None:
    assert payment_events.handler(load_event("msk-payment-poison.json"), None) == {
        "batchItemFailures": []
    }
    assert set(aws.payment_items()) == {"pay-0201", "pay-0205"}
    inbox = aws.inbox_records()
    assert inbox["evt-pay-0201"]["status"] == "COMPLETED"
    assert inbox["evt-pay-0205"]["status"] == "COMPLETED"
    assert {key: item["error_code"] for key, item in inbox.items() if "error_code" in item} == {
        "payments-0-201": "undecodable_body",
        "payments-0-202": "malformed_json",
        "evt-pay-0204": "invalid_payload",
    }
    assert {key: item["status"] for key, item in inbox.items()} == {
        "evt-pay-0201": "COMPLETED",
        "payments-0-201": "FAILED",
        "payments-0-202": "FAILED",
        "evt-pay-0204": "FAILED",
        "evt-pay-0205": "COMPLETED",
    }
    codes = {
        attribute(m, "inbox-message-key"): attribute(m, "inbox-error-code")
        for m in aws.dead_letters()
    }
    assert codes == {
        "payments-0-201": "undecodable_body",
        "payments-0-202": "malformed_json",
        "evt-pay-0204": "invalid_payload",
    }


def test_an_amount_dynamodb_cannot_store_is_poison_and_the_partition_continues(
    aws: AppState, payment_events: ModuleType
) -> None:
    """42 digits pass the model but never fit DynamoDB's 38: poison (invalid_writes), not a
    retry that holds back the rest of the partition until the event source gives up."""
    event = kafka_event(
        [
            kafka_record(0, 10, payment(1, "cust-a", amount=10**41)),
            kafka_record(0, 11, payment(2, "cust-a", amount=250)),
        ]
    )
    assert payment_events.handler(event, None) == {"batchItemFailures": []}
    assert aws.balance("cust-a") == (250, 1)
    codes = {
        attribute(m, "inbox-message-key"): attribute(m, "inbox-error-code")
        for m in aws.dead_letters()
    }
    assert codes == {"evt-1": "invalid_writes"}


def test_duplicates_are_not_failures_and_the_partition_continues(
    aws: AppState, payment_events: ModuleType
) -> None:
    payment_events.handler(kafka_event([kafka_record(0, 1, payment(1))]), None)
    event = kafka_event(
        [
            kafka_record(0, 1, payment(1)),  # redelivered offset
            kafka_record(0, 2, payment(1)),  # producer retry: same event at a new offset
            kafka_record(0, 3, payment(2)),
            kafka_record(0, 4, payment(2)),  # duplicate within the batch
            kafka_record(0, 5, payment(3, payment_id="pay-1")),  # logical duplicate (same payment)
            kafka_record(0, 6, payment(4)),
        ]
    )
    results = payment_events.consumer.process(parse_kafka_event(event))
    assert [r.outcome for r in results] == [
        Outcome.DUPLICATE,
        Outcome.DUPLICATE,
        Outcome.COMMITTED,
        Outcome.DUPLICATE,
        Outcome.BUSINESS_OUTCOME,
        Outcome.COMMITTED,
    ]
    assert aws.balance("cust-001") == (300, 3)
    assert set(aws.payment_items()) == {"pay-1", "pay-2", "pay-4"}


def test_handler_error_on_the_first_record_blocks_the_partition_even_for_known_duplicates(
    aws: AppState,
    payment_events: ModuleType,
) -> None:
    payment_events.handler(kafka_event([kafka_record(0, 3, payment(3))]), None)
    event = kafka_event(
        [
            kafka_record(0, 2, payment(2)),
            kafka_record(0, 3, payment(3)),
            kafka_record(0, 4, payment(4)),
        ]
    )
    response = consumer_failing_on(payment_events, "evt-2").handle(event)
    assert failed_offsets(response) == [("payments-0", 2), ("payments-0", 3), ("payments-0", 4)]
    assert set(aws.payment_items()) == {"pay-3"}


# ---- message identity ---------------------------------------------------------------------------


def test_idempotency_key_header_is_the_key_when_no_extractor(
    aws: AppState, payment_events: ModuleType
) -> None:
    calls: list[str] = []

    def decide(payload: Any, uow: UnitOfWork) -> None:
        calls.append(payload["n"])
        uow.update(
            aws.domain,
            {"pk": "COUNTER", "sk": "TOTAL"},
            "ADD #n :one",
            names={"#n": "count"},
            values={":one": 1},
        )

    consumer: InboxConsumer[Any] = InboxConsumer("raw-kafka", model=dict, decide=decide)
    first = kafka_record(0, 1, {"n": "a"}, headers={"idempotency-key": b"order-42"})
    retry = kafka_record(0, 2, {"n": "b"}, headers={"idempotency-key": b"order-42"})
    plain = kafka_record(0, 3, {"n": "c"})
    assert consumer.handle(kafka_event([first, retry, plain])) == {"batchItemFailures": []}
    inbox = aws.inbox_records()
    assert set(inbox) == {"order-42", "payments-0-3"}
    assert inbox["order-42"]["pk"] == "raw-kafka#order-42"
    assert inbox["order-42"]["source"] == "payments-0-1"


# ---- dead-letter queue --------------------------------------------------------------------------


def test_poison_dead_letter_carries_the_original_value_and_kafka_coordinates(
    aws: AppState,
    payment_events: ModuleType,
) -> None:
    invalid = json.dumps(payment(7, amount=0)).encode()
    event = kafka_event(
        [
            kafka_record(4, 100, invalid, key=b"ord-7", headers={"trace-id": b"t-1"}),
            kafka_record(4, 101, b"\xff\xfe\x00binary", key=b"\x00\x01"),
            kafka_record(4, 102, None),  # tombstone / missing value
        ]
    )
    assert payment_events.handler(event, None) == {"batchItemFailures": []}
    letters = {attribute(m, "kafka-offset"): m for m in aws.dead_letters()}
    assert set(letters) == {"100", "101", "102"}

    text = letters["100"]
    assert text["Body"] == invalid.decode()
    assert attribute(text, "kafka-topic") == "payments"
    assert attribute(text, "kafka-partition") == "4"
    assert attribute(text, "kafka-key") == "ord-7"
    assert json.loads(attribute(text, "kafka-headers")) == {"trace-id": "t-1"}
    assert attribute(text, "inbox-error-code") == "invalid_payload"
    assert attribute(text, "inbox-message-key") == "evt-7"
    assert "amount_cents" in attribute(text, "inbox-error")
    assert "inbox-body-encoding" not in text["MessageAttributes"]

    binary = letters["101"]
    assert attribute(binary, "inbox-body-encoding") == "base64"
    assert base64.b64decode(binary["Body"]) == b"\xff\xfe\x00binary"
    assert binary["MessageAttributes"]["kafka-key"]["BinaryValue"] == b"\x00\x01"
    assert attribute(binary, "inbox-error-code") == "undecodable_body"
    assert attribute(binary, "inbox-message-key") == "payments-4-101"

    missing = letters["102"]
    assert attribute(missing, "inbox-error-code") == "undecodable_body"
    assert "kafka-key" not in missing["MessageAttributes"]
    # SQS refuses an empty body: a tombstone travels as a placeholder marked as empty.
    assert missing["Body"] == "(empty)"
    assert attribute(missing, "inbox-body-encoding") == "empty"
    assert attribute(missing, "kafka-tombstone") == "true"

    failed = aws.inbox_records()["payments-4-101"]
    assert failed["status"] == "FAILED"
    assert failed["payload_snapshot"] == b"\xff\xfe\x00binary"


# ---- replay through the SQS replay queue -------------------------------------------------------


def test_replay_sample_event_commits_on_empty_tables(
    aws: AppState, payment_events: ModuleType
) -> None:
    assert payment_events.handler(load_event("sqs-payment-replay.json"), None) == {
        "batchItemFailures": []
    }
    assert aws.balance("cust-003") == (2099, 1)
    assert aws.balance("cust-001") == (3149, 1)


def test_replay_of_a_message_committed_via_kafka_is_a_duplicate(
    aws: AppState, payment_events: ModuleType
) -> None:
    assert payment_events.handler(load_event("msk-payment-single.json"), None) == {
        "batchItemFailures": []
    }
    results = payment_events.consumer.process(
        parse_sqs_event(load_event("sqs-payment-replay.json"))
    )
    assert [(r.message_key, r.outcome) for r in results] == [
        ("evt-pay-0501", Outcome.COMMITTED),
        ("evt-pay-0001", Outcome.DUPLICATE),
    ]
    assert aws.balance("cust-001") == (3149, 1)
    assert aws.balance("cust-003") == (2099, 1)


def test_a_new_event_through_the_replay_queue_is_applied_once(
    aws: AppState, payment_events: ModuleType
) -> None:
    body = json.dumps(payment(9, "cust-r", 700))
    event = {"Records": [replay_record(body, "m-1"), replay_record(body, "m-2")]}
    assert payment_events.handler(event, None) == {"batchItemFailures": []}
    assert payment_events.handler({"Records": [replay_record(body, "m-3")]}, None) == {
        "batchItemFailures": []
    }
    # ...and later through Kafka too.
    again = kafka_event([kafka_record(0, 900, payment(9, "cust-r", 700))])
    assert payment_events.handler(again, None) == {"batchItemFailures": []}
    assert aws.balance("cust-r") == (700, 1)
    assert aws.inbox_records()["evt-9"]["source"].endswith("PaymentReplayQueue")


def test_dead_lettered_kafka_poison_replays_after_the_fix(
    aws: AppState, payment_events: ModuleType
) -> None:
    """A record rejected by a (since fixed) handler bug is replayed through SQS and committed."""
    event = kafka_event([kafka_record(0, 1, payment(1, "cust-x", 250), key=b"ord-1")])

    def reject(payment_: Any, uow: UnitOfWork) -> None:
        raise PoisonMessage("customer id format")

    buggy: InboxConsumer[Any] = InboxConsumer(
        "payment-events", model=payment_events.PaymentCaptured, decide=reject, key="event_id"
    )
    assert buggy.handle(event) == {"batchItemFailures": []}
    letters = aws.dead_letters()
    assert [attribute(m, "inbox-error-code") for m in letters] == ["rejected_by_handler"]
    assert aws.inbox_records()["evt-1"]["status"] == "FAILED"

    assert payment_events.handler(redrive(letters), None) == {"batchItemFailures": []}
    assert aws.balance("cust-x") == (250, 1)
    assert aws.inbox_records()["evt-1"]["status"] == "COMPLETED"
    # Kafka redelivering the original offset now is a duplicate.
    assert payment_events.handler(event, None) == {"batchItemFailures": []}
    assert aws.balance("cust-x") == (250, 1)


def test_base64_dead_letter_is_decoded_on_replay(aws: AppState, payment_events: ModuleType) -> None:
    # A non-UTF-8 value goes to the DLQ base64-encoded...
    payment_events.handler(kafka_event([kafka_record(0, 1, b"\xff\xfe")]), None)
    (letter,) = aws.dead_letters()
    assert attribute(letter, "inbox-body-encoding") == "base64"
    # ...and replaying it hands the original bytes to the inbox again (not the base64 text):
    # still poison, dead-lettered with the same body, not a base64 of base64.
    assert payment_events.handler(redrive([letter]), None) == {"batchItemFailures": []}
    (again,) = aws.dead_letters()
    assert again["Body"] == letter["Body"] == base64.b64encode(b"\xff\xfe").decode()
    assert attribute(again, "inbox-body-encoding") == "base64"
    assert attribute(again, "inbox-error-code") == "undecodable_body"
    assert attribute(again, "kafka-offset") == "1"


def test_a_replayed_unreadable_record_keeps_its_key_and_its_failed_record(
    aws: AppState,
    payment_events: ModuleType,
) -> None:
    """Its key cannot come from the body, and the replay queue gives it a new messageId: the
    key it was dead-lettered under (`inbox-message-key`) is used again, so replays update one
    FAILED record instead of leaving one per attempt."""
    payment_events.handler(kafka_event([kafka_record(0, 7, b"\xff\xfe")]), None)
    (letter,) = aws.dead_letters()
    assert attribute(letter, "inbox-message-key") == "payments-0-7"

    for _ in range(2):
        assert payment_events.handler(redrive([letter]), None) == {"batchItemFailures": []}
        (letter,) = aws.dead_letters()
        assert attribute(letter, "inbox-message-key") == "payments-0-7"

    failed = {key: item for key, item in aws.inbox_records().items() if item["status"] == "FAILED"}
    assert list(failed) == ["payments-0-7"]
    assert failed["payments-0-7"]["error_code"] == "undecodable_body"


def test_base64_encoded_replay_body_of_a_valid_payment_is_committed(
    aws: AppState, payment_events: ModuleType
) -> None:
    body = base64.b64encode(json.dumps(payment(5, "cust-b64", 321)).encode()).decode()
    event = {"Records": [replay_record(body, "m-b64", {"inbox-body-encoding": "base64"})]}
    assert payment_events.handler(event, None) == {"batchItemFailures": []}
    assert aws.balance("cust-b64") == (321, 1)


def test_a_corrected_retry_after_poison_in_the_same_batch_commits(
    aws: AppState, payment_events: ModuleType
) -> None:
    """The producer sent an invalid payment, then the corrected one under the same event_id.

    As in separate batches, the correction is processed on its own (the FAILED record of the
    dead-lettered copy does not block it); a stale copy of the invalid payload arriving after
    the correction committed is a payload conflict, dead-lettered, never acknowledged silently."""
    stale = payment(7, "cust-fix", 0)  # poison: amount_cents must be > 0
    event = kafka_event(
        [
            kafka_record(0, 1, stale),
            kafka_record(0, 2, payment(7, "cust-fix", 500)),
            kafka_record(0, 3, stale),
            kafka_record(0, 4, payment(9, "cust-fix", 40)),
        ]
    )
    results = payment_events.consumer.process(parse_kafka_event(event))
    assert [(r.message.delivery_id, r.outcome, r.error_code) for r in results] == [
        ("payments-0-1", Outcome.DEAD_LETTERED, "invalid_payload"),
        ("payments-0-2", Outcome.COMMITTED, None),
        ("payments-0-3", Outcome.DEAD_LETTERED, "fingerprint_mismatch"),
        ("payments-0-4", Outcome.COMMITTED, None),
    ]
    assert aws.balance("cust-fix") == (540, 2)
    assert aws.inbox_records()["evt-7"]["status"] == "COMPLETED"

    letters = aws.dead_letters()
    assert sorted(attribute(m, "inbox-error-code") for m in letters) == [
        "fingerprint_mismatch",
        "invalid_payload",
    ]
    assert all(json.loads(m["Body"]) == stale for m in letters)


def test_a_key_in_two_partitions_follows_its_failed_leader(
    aws: AppState, payment_events: ModuleType
) -> None:
    """The same event on two partitions (a producer retry to another partition): when the first
    delivery fails, the second is reported too (not acknowledged), blocking its own partition."""
    attempts: list[str] = []

    def flaky(payment_: Any, uow: UnitOfWork) -> None:
        attempts.append(payment_.event_id)
        if payment_.event_id == "evt-1" and attempts.count("evt-1") == 1:
            raise ConnectionError("downstream hiccup")
        payment_events.record_payment(payment_, uow)

    consumer: InboxConsumer[Any] = InboxConsumer(
        "payment-events", model=payment_events.PaymentCaptured, decide=flaky, key="event_id"
    )
    event = kafka_event(
        [
            kafka_record(0, 1, payment(1, "cust-1", 100)),
            kafka_record(1, 5, payment(2, "cust-2", 20)),
            kafka_record(1, 6, payment(1, "cust-1", 100)),  # same event, other partition
            kafka_record(1, 7, payment(3, "cust-2", 30)),
        ]
    )
    results = consumer.process(parse_kafka_event(event))
    assert [(r.message.delivery_id, r.outcome, r.error_code) for r in results] == [
        ("payments-0-1", Outcome.FAILED, "handler_error"),
        ("payments-1-5", Outcome.COMMITTED, None),
        ("payments-1-6", Outcome.FAILED, "leader_failed"),
        ("payments-1-7", Outcome.SKIPPED, None),
    ]
    assert aws.balance("cust-1") == (0, 0)
    assert aws.balance("cust-2") == (20, 1)

    redelivered = kafka_event(
        [
            kafka_record(0, 1, payment(1, "cust-1", 100)),
            kafka_record(1, 6, payment(1, "cust-1", 100)),
            kafka_record(1, 7, payment(3, "cust-2", 30)),
        ]
    )
    assert consumer.handle(redelivered) == {"batchItemFailures": []}
    assert aws.balance("cust-1") == (100, 1)
    assert aws.balance("cust-2") == (50, 2)
