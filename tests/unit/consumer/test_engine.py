"""The processing model on moto: through a small InboxConsumer defined here, then end to end
through functions/order_events.

The small consumer counts hits per message id in the domain table and misbehaves on request
(`"action"` in the payload), so every branch of the engine can be reached with real writes. The
order-events tests drive the real handler (or its consumer's `process`) with SQS events and
check the partial batch response, the inbox records, the domain items and the dead-letter queue.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import (
    ORDER_FIFO_QUEUE_ARN,
    SENDER_ID,
    load_event,
    received_attributes,
    sqs_event,
    sqs_record,
    sqs_record_from,
    string_attribute,
)
from devkit.handlers import load_function, process
from devkit.meters import RequestMeter
from devkit.payloads import SAMPLE_SKUS, order
from lambda_inbox import (
    ConditionFailures,
    Decide,
    InboxConsumer,
    MessageResult,
    Outcome,
    PoisonMessage,
    UnitOfWork,
    UnsupportedEvent,
)
from lambda_inbox._config import FifoFailureMode

CONSUMER = "unit-consumer"
ORDER_EVENTS = "order-events"
Fallback = Callable[[dict[str, Any], ConditionFailures, UnitOfWork], object]

# ---- a small consumer defined here ----------------------------------------------------------


def make_consumer(
    aws: AppState,
    *,
    seen: list[str] | None = None,
    dlq: str | None = "standard",
    fifo_mode: FifoFailureMode = "stop",
    fallback: Fallback | None = None,
    key: Any = "id",
    broken: bool = True,
) -> InboxConsumer[dict[str, Any]]:
    """`broken=False` is the same handler after a fix: it no longer poisons anything."""
    calls = seen if seen is not None else []

    def decide(payload: dict[str, Any], uow: UnitOfWork) -> None:
        calls.append(str(payload.get("id")))
        action = payload.get("action", "count") if broken else "count"
        if action == "raise":
            raise RuntimeError("downstream outage")
        if action == "poison":
            raise PoisonMessage("this can never work", code="custom_code")
        if action == "float":
            uow.put(aws.domain, {"pk": "P", "sk": "S", "price": 1.5})
            return
        if action == "require":
            uow.condition_check(
                aws.domain,
                {"pk": "MISSING", "sk": str(payload["id"])},
                "attribute_exists(pk)",
                label="must-exist",
            )
        uow.update(
            aws.domain,
            {"pk": f"COUNT#{payload['id']}", "sk": "C"},
            "ADD hits :one",
            values={":one": 1},
        )
        uow.set_result(outcome="counted")

    queue = {"standard": aws.dlq_url, "fifo": aws.fifo_dlq_url, None: None}.get(dlq, dlq)
    return aws.consumer(
        CONSUMER,
        config={"dead_letter_queue_url": queue, "fifo_failure_mode": fifo_mode},
        model=dict,
        decide=Decide(decide, on_condition_failed=fallback),
        key=key,
    )


def body(message_id: str, action: str = "count", **extra: Any) -> str:
    return json.dumps({"id": message_id, "action": action, **extra})


def hits(aws: AppState, message_id: str) -> int:
    item = aws.item(f"COUNT#{message_id}", "C")
    return int(item["hits"]["N"]) if item else 0


def summary(results: list[MessageResult]) -> list[tuple[Outcome, str | None]]:
    return [(result.outcome, result.error_code) for result in results]


def record(aws: AppState, key: str) -> dict[str, Any] | None:
    return aws.inbox_record(CONSUMER, key)


def test_commit_writes_effects_and_inbox_record_together(aws: AppState) -> None:
    consumer = make_consumer(aws)
    event = sqs_event(*(sqs_record(body(f"m{index}")) for index in range(3)))
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    assert [hits(aws, f"m{index}") for index in range(3)] == [1, 1, 1]
    stored = record(aws, "m0")
    assert stored is not None
    assert stored["status"] == {"S": "COMPLETED"}
    assert json.loads(stored["result"]["S"]) == {"outcome": "counted"}
    assert stored["source"] == {"S": event["Records"][0]["eventSourceARN"]}


def test_generic_handler_error_is_reported_and_nothing_is_dead_lettered(aws: AppState) -> None:
    consumer = make_consumer(aws)
    failing = sqs_record(body("bad", "raise"))
    event = sqs_event(sqs_record(body("ok1")), failing, sqs_record(body("ok2")))
    results = process(consumer, event)
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.FAILED, "handler_error"),
        (Outcome.COMMITTED, None),
    ]
    assert "RuntimeError: downstream outage" in results[1].detail
    assert consumer.handle(event, None) == {
        "batchItemFailures": [{"itemIdentifier": failing["messageId"]}]
    }
    assert aws.dead_letters() == []
    assert record(aws, "bad") is None
    assert (hits(aws, "ok1"), hits(aws, "ok2")) == (1, 1)


def test_poison_message_raised_by_the_handler_is_dead_lettered(aws: AppState) -> None:
    consumer = make_consumer(aws)
    poison = sqs_record(
        body("p1", "poison"), message_attributes={"trace-id": string_attribute("t-1")}
    )
    event = sqs_event(poison, sqs_record(body("ok")))
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    (dead,) = aws.dead_letters()
    assert dead["Body"] == poison["body"]
    assert dead["MessageAttributes"] == {
        "trace-id": {"DataType": "String", "StringValue": "t-1"},
        "inbox-error-code": {"DataType": "String", "StringValue": "custom_code"},
        "inbox-error": {"DataType": "String", "StringValue": "this can never work"},
        "inbox-message-key": {"DataType": "String", "StringValue": "p1"},
        "inbox-sender": {"DataType": "String", "StringValue": SENDER_ID},
    }
    stored = record(aws, "p1")
    assert stored is not None and stored["status"] == {"S": "FAILED"}
    assert stored["error_code"] == {"S": "custom_code"}
    assert (hits(aws, "p1"), hits(aws, "ok")) == (0, 1)


def test_invalid_writes_are_dead_lettered(aws: AppState) -> None:
    consumer = make_consumer(aws)
    (result,) = process(consumer, sqs_event(sqs_record(body("f1", "float"))))
    assert (result.outcome, result.error_code) == (Outcome.DEAD_LETTERED, "invalid_writes")
    assert "Decimal" in result.detail
    (dead,) = aws.dead_letters()
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "invalid_writes"
    assert aws.item("P", "S") is None


def test_model_rejection_is_invalid_payload(aws: AppState) -> None:
    def strict(raw: Any) -> dict[str, Any]:
        if "amount" not in raw:
            raise ValueError("amount is required")
        return dict(raw)

    consumer = aws.consumer(CONSUMER, model=strict, decide=lambda payload, uow: None, key="id")
    (result,) = process(consumer, sqs_event(sqs_record(body("v1"))))
    assert (result.outcome, result.error_code) == (Outcome.DEAD_LETTERED, "invalid_payload")
    assert "amount is required" in result.detail


def test_condition_failure_without_fallback_is_dead_lettered(aws: AppState) -> None:
    consumer = make_consumer(aws)
    event = sqs_event(
        sqs_record(body("ok1")), sqs_record(body("c1", "require")), sqs_record(body("ok2"))
    )
    results = process(consumer, event)
    # The two bystanders shared the cancelled transaction and are committed on the next round.
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.DEAD_LETTERED, "condition_failed"),
        (Outcome.COMMITTED, None),
    ]
    assert "must-exist" in results[1].detail
    assert "no on_condition_failed handler" in results[1].detail
    (dead,) = aws.dead_letters()
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "condition_failed"
    assert (hits(aws, "ok1"), hits(aws, "c1"), hits(aws, "ok2")) == (1, 0, 1)
    stored = record(aws, "c1")
    assert stored is not None and stored["status"] == {"S": "FAILED"}


def test_condition_failure_with_fallback_commits_a_business_outcome(aws: AppState) -> None:
    received: list[ConditionFailures] = []

    def fallback(payload: dict[str, Any], failed: ConditionFailures, uow: UnitOfWork) -> None:
        received.append(failed)
        uow.put(aws.domain, {"pk": f"REJECTED#{payload['id']}", "sk": "R", "why": "missing"})
        uow.set_result(outcome="rejected")

    consumer = make_consumer(aws, fallback=fallback)
    (result,) = process(consumer, sqs_event(sqs_record(body("c2", "require"))))
    assert result.outcome is Outcome.BUSINESS_OUTCOME
    (failures,) = received
    assert failures.labels == frozenset({"must-exist"})
    assert aws.item("REJECTED#c2", "R") is not None
    assert hits(aws, "c2") == 0
    stored = record(aws, "c2")
    assert stored is not None
    assert json.loads(stored["result"]["S"]) == {"outcome": "rejected"}


def test_fallback_raising_poison_is_dead_lettered(aws: AppState) -> None:
    def fallback(payload: dict[str, Any], failed: ConditionFailures, uow: UnitOfWork) -> None:
        raise PoisonMessage("no way out", code="no_fallback")

    consumer = make_consumer(aws, fallback=fallback)
    (result,) = process(consumer, sqs_event(sqs_record(body("c3", "require"))))
    assert (result.outcome, result.error_code) == (Outcome.DEAD_LETTERED, "no_fallback")


def test_in_batch_follower_of_a_failed_leader_fails_too(aws: AppState) -> None:
    consumer = make_consumer(aws)
    leader = sqs_record(body("same", "raise"))
    follower = sqs_record(leader["body"])
    results = process(consumer, sqs_event(leader, follower))
    assert summary(results) == [
        (Outcome.FAILED, "handler_error"),
        (Outcome.FAILED, "leader_failed"),
    ]


def test_in_batch_follower_of_a_dead_lettered_leader_is_a_duplicate(aws: AppState) -> None:
    seen: list[str] = []
    consumer = make_consumer(aws, seen=seen)
    leader = sqs_record(body("same", "poison"))
    results = process(consumer, sqs_event(leader, sqs_record(leader["body"])))
    assert summary(results) == [
        (Outcome.DEAD_LETTERED, "custom_code"),
        (Outcome.DUPLICATE, None),
    ]
    assert seen == ["same"]  # the follower was not handled again
    assert len(aws.dead_letters()) == 1


def test_a_failed_record_is_claimed_by_a_replay_after_a_fix(aws: AppState) -> None:
    poison = sqs_record(body("r1", "poison"))
    (first,) = process(make_consumer(aws), sqs_event(poison))
    assert first.outcome is Outcome.DEAD_LETTERED
    (dead,) = aws.dead_letters()
    # The DLQ copy is redriven to the source queue and processed by the fixed handler.
    replay = sqs_record_from(dead, arn=poison["eventSourceARN"])
    (second,) = process(make_consumer(aws, broken=False), sqs_event(replay))
    assert second.outcome is Outcome.COMMITTED
    stored = record(aws, "r1")
    assert stored is not None and stored["status"] == {"S": "COMPLETED"}
    assert hits(aws, "r1") == 1


def test_an_expired_completed_record_is_processed_again(aws: AppState) -> None:
    consumer = make_consumer(aws)
    event = sqs_event(sqs_record(body("e1")))
    assert summary(process(consumer, event)) == [(Outcome.COMMITTED, None)]
    assert summary(process(consumer, event)) == [(Outcome.DUPLICATE, None)]
    aws.dynamodb.update_item(
        TableName=aws.inbox,
        Key={"pk": {"S": f"{CONSUMER}#e1"}},
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 1)}},
    )
    assert summary(process(consumer, event)) == [(Outcome.COMMITTED, None)]
    assert hits(aws, "e1") == 2


def test_without_a_dead_letter_queue_poison_is_a_failure(aws: AppState) -> None:
    consumer = make_consumer(aws, dlq=None)
    poison = sqs_record(body("p", "poison"))
    results = process(consumer, sqs_event(poison))
    assert summary(results) == [(Outcome.FAILED, "custom_code")]
    assert "no dead-letter queue configured: set DEAD_LETTER_QUEUE_URL" in results[0].detail
    assert record(aws, "p") is None
    assert consumer.handle(sqs_event(poison), None) == {
        "batchItemFailures": [{"itemIdentifier": poison["messageId"]}]
    }


def test_dead_letter_failure_is_reported_for_redelivery(aws: AppState) -> None:
    missing_queue = aws.dlq_url.rsplit("/", 1)[0] + "/no-such-queue"
    consumer = make_consumer(aws, dlq=missing_queue)
    (result,) = process(consumer, sqs_event(sqs_record(body("p", "poison"))))
    assert (result.outcome, result.error_code) == (Outcome.FAILED, "dead_letter_failed")
    assert record(aws, "p") is None


def fifo_batch() -> list[dict[str, Any]]:
    """g1:a ok, g2:b fails, g1:c ok, g2:d ok."""
    return [
        sqs_record(body("a"), arn=ORDER_FIFO_QUEUE_ARN, group="g1", dedup="a"),
        sqs_record(body("b", "raise"), arn=ORDER_FIFO_QUEUE_ARN, group="g2", dedup="b"),
        sqs_record(body("c"), arn=ORDER_FIFO_QUEUE_ARN, group="g1", dedup="c"),
        sqs_record(body("d"), arn=ORDER_FIFO_QUEUE_ARN, group="g2", dedup="d"),
    ]


@pytest.mark.parametrize(
    ("fifo_mode", "after_the_failure", "handled", "counted"),
    [
        # The ordering scope is the queue: every later record is held back.
        ("stop", [Outcome.SKIPPED, Outcome.SKIPPED], ["a", "b"], [1, 0, 0]),
        # The ordering scope is the message group: only g2's later record is held back.
        ("skip-group", [Outcome.COMMITTED, Outcome.SKIPPED], ["a", "b", "c"], [1, 1, 0]),
    ],
)
def test_fifo_mode_holds_back_the_later_records_of_the_failed_scope(
    aws: AppState,
    fifo_mode: FifoFailureMode,
    after_the_failure: list[Outcome],
    handled: list[str],
    counted: list[int],
) -> None:
    seen: list[str] = []
    consumer = make_consumer(aws, seen=seen, fifo_mode=fifo_mode)
    records = fifo_batch()
    results = process(consumer, sqs_event(*records))
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.FAILED, "handler_error"),
        *((outcome, None) for outcome in after_the_failure),
    ]
    assert seen == handled
    assert [hits(aws, name) for name in "acd"] == counted


def test_fifo_stop_mode_response_lists_the_failed_record_and_all_later_ones(aws: AppState) -> None:
    consumer = make_consumer(aws, fifo_mode="stop")
    records = fifo_batch()
    assert consumer.handle(sqs_event(*records), None) == {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records[1:]]
    }
    assert hits(aws, "a") == 1


def test_fifo_skip_group_mode_redelivery_reports_only_the_failed_group(aws: AppState) -> None:
    process(make_consumer(aws, fifo_mode="skip-group"), sqs_event(*fifo_batch()))
    assert [hits(aws, name) for name in "acd"] == [1, 1, 0]
    fresh = fifo_batch()
    assert make_consumer(aws, fifo_mode="skip-group").handle(sqs_event(*fresh), None) == {
        "batchItemFailures": [
            {"itemIdentifier": fresh[1]["messageId"]},
            {"itemIdentifier": fresh[3]["messageId"]},
        ]
    }


def test_fifo_poison_does_not_stop_the_queue(aws: AppState) -> None:
    consumer = make_consumer(aws, dlq="fifo", fifo_mode="stop")
    records = [
        sqs_record(body("x", "poison"), arn=ORDER_FIFO_QUEUE_ARN, group="g1", dedup="x"),
        sqs_record(body("y"), arn=ORDER_FIFO_QUEUE_ARN, group="g1", dedup="y"),
    ]
    assert summary(process(consumer, sqs_event(*records))) == [
        (Outcome.DEAD_LETTERED, "custom_code"),
        (Outcome.COMMITTED, None),
    ]
    (dead,) = aws.dead_letters(fifo=True)
    assert dead["Attributes"]["MessageGroupId"] == "g1"


def test_callable_key_extractor(aws: AppState) -> None:
    consumer = make_consumer(aws, key=lambda payload: f"{payload['id']}-v2")
    (result,) = process(consumer, sqs_event(sqs_record(body("k1"))))
    assert (result.outcome, result.message_key) == (Outcome.COMMITTED, "k1-v2")
    assert record(aws, "k1-v2") is not None


def test_idempotency_key_attribute_without_an_extractor(aws: AppState) -> None:
    consumer = make_consumer(aws, key=None)
    attributes = {"idempotency-key": string_attribute("idem-7")}
    first = sqs_record(body("i1"), message_attributes=attributes)
    second = sqs_record(body("i1"), message_attributes=attributes)
    results = process(consumer, sqs_event(first, second))
    assert [(r.outcome, r.message_key) for r in results] == [
        (Outcome.COMMITTED, f"{SENDER_ID}/idem-7"),
        (Outcome.DUPLICATE, f"{SENDER_ID}/idem-7"),
    ]


@pytest.mark.parametrize(
    "event",
    [
        {"foo": "bar"},
        {"Records": [{"eventSource": "aws:sns", "Sns": {}}]},
        {"Records": [sqs_record("{}"), {"eventSource": "aws:s3"}]},
    ],
)
def test_unsupported_events_raise(aws: AppState, event: dict[str, Any]) -> None:
    with pytest.raises(
        UnsupportedEvent, match="expected an SQS, Kinesis or DynamoDB Streams event"
    ):
        make_consumer(aws).handle(event, None)


def test_empty_records_is_an_empty_response_without_requests(aws: AppState) -> None:
    consumer = make_consumer(aws)
    meter = RequestMeter(consumer.dynamodb)
    assert consumer.handle({"Records": []}, None) == {"batchItemFailures": []}
    assert consumer.process([], None) == []
    assert meter.operations() == []


def test_missing_inbox_table_fails_the_whole_batch(aws: AppState) -> None:
    consumer = aws.consumer(
        CONSUMER,
        config={"inbox_table": "missing"},
        model=dict,
        decide=lambda p, u: None,
        key="id",
    )
    records = [sqs_record(body("a")), sqs_record("{not json")]
    assert consumer.handle(sqs_event(*records), None) == {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records]
    }
    assert aws.dead_letters() == []


def test_a_raising_key_extractor_dead_letters_only_that_message(aws: AppState) -> None:
    consumer = make_consumer(aws, key=lambda payload: payload["event_id"])
    without_key = sqs_record(body("n1"), message_id="mid-without-key")
    with_key = sqs_record(json.dumps({"id": "n2", "event_id": "evt-n2"}))
    assert consumer.handle(sqs_event(without_key, with_key), None) == {"batchItemFailures": []}
    (dead,) = aws.dead_letters()
    assert dead["Body"] == without_key["body"]
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "missing_key"
    key = dead["MessageAttributes"]["inbox-message-key"]["StringValue"]
    assert key == f"{SENDER_ID}/mid-without-key"
    assert (hits(aws, "n1"), hits(aws, "n2")) == (0, 1)


@dataclass
class Typed:
    id: str
    amount: int = 0


@pytest.mark.parametrize(
    ("model", "bad_body"),
    [
        (lambda raw: Typed(**raw), '{"id": "b", "unexpected": 1}'),  # TypeError
        (lambda raw: {"id": raw["id"], "amount": raw["amount"]}, '{"id": "b"}'),  # KeyError
    ],
)
def test_a_plain_model_callable_rejecting_a_payload_is_invalid_payload(
    aws: AppState, model: Callable[[Any], Any], bad_body: str
) -> None:
    consumer = aws.consumer(CONSUMER, model=model, decide=lambda payload, uow: None, key="id")
    good = sqs_record('{"id": "a", "amount": 1}')
    results = process(consumer, sqs_event(good, sqs_record(bad_body)))
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.DEAD_LETTERED, "invalid_payload"),
    ]
    (dead,) = aws.dead_letters()
    assert dead["Body"] == bad_body


def write_consumer(aws: AppState, table_for: dict[str, str]) -> InboxConsumer[dict[str, Any]]:
    """Each message updates one item; `table_for` / ids pick invalid writes on purpose."""

    def decide(payload: dict[str, Any], uow: UnitOfWork) -> None:
        message_id = payload["id"]
        table = table_for.get(message_id, aws.domain)
        expression = "SET a = :v ADD" if message_id.startswith("syntax") else "SET a = :v"
        uow.update(table, {"pk": message_id, "sk": "Y"}, expression, values={":v": 1})

    return aws.consumer(CONSUMER, model=dict, decide=decide, key="id")


def test_a_rejected_group_is_split_and_only_the_culprit_dead_lettered(aws: AppState) -> None:
    consumer = write_consumer(aws, {})
    meter = RequestMeter(consumer.dynamodb)
    ids = ["a", "syntax-error", "b"]
    results = process(consumer, sqs_event(*(sqs_record(json.dumps({"id": i})) for i in ids)))
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.DEAD_LETTERED, "write_rejected"),
        (Outcome.COMMITTED, None),
    ]
    assert "ValidationException" in results[1].detail
    # The rejected group, then every message alone; plus the FAILED record.
    assert meter.operations() == ["TransactWriteItems"] * 4 + ["PutItem"]
    assert aws.item("a", "Y") is not None
    assert aws.item("syntax-error", "Y") is None
    (dead,) = aws.dead_letters()
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "write_rejected"


def test_a_missing_domain_table_is_reported_not_dead_lettered(aws: AppState) -> None:
    consumer = write_consumer(aws, {"x": "no-such-table"})
    record_x = sqs_record(json.dumps({"id": "x"}))
    results = process(consumer, sqs_event(record_x))
    assert summary(results) == [(Outcome.FAILED, "dynamodb_unavailable")]
    assert "ResourceNotFoundException" in results[0].detail
    assert consumer.handle(sqs_event(record_x), None) == {
        "batchItemFailures": [{"itemIdentifier": record_x["messageId"]}]
    }
    assert aws.dead_letters() == []
    assert record(aws, "x") is None


# ---- functions/order_events ----------------------------------------------------------------


def outcomes(results: list[MessageResult]) -> list[Outcome]:
    return [result.outcome for result in results]


def all_stock(aws: AppState) -> dict[str, tuple[int, int] | None]:
    return {sku: aws.stock(sku) for sku in SAMPLE_SKUS}


def record_of(aws: AppState, key: str) -> dict[str, Any]:
    item = aws.inbox_record(ORDER_EVENTS, key)
    assert item is not None, f"no inbox record for {key}"
    return item


def test_single_order_commits_with_its_effects(aws: AppState, order_events: ModuleType) -> None:
    response = order_events.handler(load_event("sqs-order-single.json"), None)
    assert response == {"batchItemFailures": []}
    assert aws.stock("SKU-RED-MUG") == (99, 1)
    assert aws.stock("SKU-BLUE-CAP") == (99, 1)
    shipment = aws.item("ORDER#ord-1001", "SHIPMENT")
    assert shipment is not None and shipment["status"] == {"S": "PENDING"}
    record = record_of(aws, "evt-order-0001")
    assert record["status"] == {"S": "COMPLETED"}
    assert json.loads(record["result"]["S"]) == {"outcome": "reserved"}
    assert int(record["expires_at"]["N"]) > time.time() + 6 * 24 * 3600
    assert aws.dead_letters() == []


def test_redelivery_is_a_duplicate_with_same_or_new_message_id(
    aws: AppState, order_events: ModuleType
) -> None:
    event = load_event("sqs-order-single.json")
    assert outcomes(process(order_events.consumer, event)) == [Outcome.COMMITTED]
    before = all_stock(aws)
    assert outcomes(process(order_events.consumer, event)) == [Outcome.DUPLICATE]
    retried = json.loads(json.dumps(event))
    retried["Records"][0]["messageId"] = "another-message-id"
    (result,) = process(order_events.consumer, retried)
    assert (result.outcome, result.message_key) == (Outcome.DUPLICATE, "evt-order-0001")
    assert all_stock(aws) == before
    assert order_events.handler(retried, None) == {"batchItemFailures": []}


def test_in_batch_duplicates_follow_their_leader(aws: AppState, order_events: ModuleType) -> None:
    results = process(order_events.consumer, load_event("sqs-order-batch-duplicates.json"))
    assert outcomes(results) == [Outcome.COMMITTED] * 4 + [Outcome.DUPLICATE] * 2
    assert [r.message_key for r in results[4:]] == ["evt-order-0101", "evt-order-0102"]
    assert all_stock(aws) == {
        "SKU-RED-MUG": (97, 3),
        "SKU-BLUE-CAP": (98, 2),
        "SKU-GREEN-PEN": (95, 5),
    }


def test_in_batch_follower_with_a_different_payload_is_dead_lettered(
    aws: AppState, order_events: ModuleType
) -> None:
    first = sqs_record(order("evt-1", "ord-1", [("SKU-RED-MUG", 1)]))
    changed = sqs_record(order("evt-1", "ord-1", [("SKU-RED-MUG", 5)]))
    results = process(order_events.consumer, sqs_event(first, changed))
    assert outcomes(results) == [Outcome.COMMITTED, Outcome.DEAD_LETTERED]
    assert results[1].error_code == "fingerprint_mismatch"
    assert aws.stock("SKU-RED-MUG") == (99, 1)
    (dead,) = aws.dead_letters()
    assert dead["Body"] == changed["body"]


def test_fingerprint_mismatch_is_dead_lettered_and_the_record_untouched(
    aws: AppState, order_events: ModuleType
) -> None:
    process(order_events.consumer, load_event("sqs-order-single.json"))
    before = record_of(aws, "evt-order-0001")
    stock = all_stock(aws)
    conflicting = sqs_record(order("evt-order-0001", "ord-9999", [("SKU-GREEN-PEN", 3)]))
    response = order_events.handler(sqs_event(conflicting), None)
    assert response == {"batchItemFailures": []}
    (dead,) = aws.dead_letters()
    assert dead["Body"] == conflicting["body"]
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "fingerprint_mismatch"
    assert dead["MessageAttributes"]["inbox-message-key"]["StringValue"] == "evt-order-0001"
    assert record_of(aws, "evt-order-0001") == before
    assert all_stock(aws) == stock
    assert aws.item("ORDER#ord-9999", "SHIPMENT") is None


def test_poison_records_are_dead_lettered_unchanged_and_the_rest_commits(
    aws: AppState, order_events: ModuleType
) -> None:
    event = load_event("sqs-order-poison.json")
    records = event["Records"]
    results = process(order_events.consumer, event)
    assert [(r.outcome, r.error_code, r.message_key) for r in results] == [
        (Outcome.COMMITTED, None, "evt-order-0201"),
        (Outcome.DEAD_LETTERED, "malformed_json", f"{SENDER_ID}/{records[1]['messageId']}"),
        (Outcome.DEAD_LETTERED, "invalid_payload", "evt-order-0203"),
        (Outcome.DEAD_LETTERED, "invalid_payload", "evt-order-0204"),
        (Outcome.COMMITTED, None, "evt-order-0205"),
    ]
    assert all_stock(aws) == {
        "SKU-RED-MUG": (100, 0),  # record 4 (RED-MUG 1, GREEN-PEN 0) changed nothing
        "SKU-BLUE-CAP": (99, 1),
        "SKU-GREEN-PEN": (98, 2),
    }
    dead = {
        m["MessageAttributes"]["inbox-message-key"]["StringValue"]: m for m in aws.dead_letters()
    }
    for record, result in zip(records[1:4], results[1:4], strict=True):
        assert result.message_key is not None
        received = dead[result.message_key]
        assert received["Body"].encode("utf-8") == record["body"].encode("utf-8")
        attributes = received["MessageAttributes"]
        assert {k: v for k, v in attributes.items() if not k.startswith("inbox-")} == (
            received_attributes(record["messageAttributes"])
        )
        assert attributes["inbox-error-code"]["StringValue"] == result.error_code
        stored = record_of(aws, result.message_key)
        assert stored["status"] == {"S": "FAILED"}
        assert stored["error_code"] == {"S": result.error_code}
        assert "expires_at" in stored  # removed by TTL after the failed-record retention
        assert stored["payload_snapshot"] == {"B": record["body"].encode("utf-8")}
    assert len(dead) == 3


def test_poison_is_not_reported_in_batch_item_failures(
    aws: AppState, order_events: ModuleType
) -> None:
    assert order_events.handler(load_event("sqs-order-poison.json"), None) == {
        "batchItemFailures": []
    }
    assert len(aws.dead_letters()) == 3


def test_missing_key_is_dead_lettered_under_the_message_id(
    aws: AppState, order_events: ModuleType
) -> None:
    body = json.dumps({k: v for k, v in order("x").items() if k != "event_id"})
    record = sqs_record(body, message_id="mid-no-key")
    (result,) = process(order_events.consumer, sqs_event(record))
    assert (result.outcome, result.error_code, result.message_key) == (
        Outcome.DEAD_LETTERED,
        "missing_key",
        f"{SENDER_ID}/mid-no-key",
    )
    (dead,) = aws.dead_letters()
    assert dead["Body"] == body
    assert record_of(aws, f"{SENDER_ID}/mid-no-key")["error_code"] == {"S": "missing_key"}


def test_insufficient_stock_commits_a_rejection(aws: AppState, order_events: ModuleType) -> None:
    (result,) = process(order_events.consumer, load_event("sqs-order-insufficient-stock.json"))
    assert result.outcome is Outcome.BUSINESS_OUTCOME
    rejection = aws.item("ORDER#ord-1401", "REJECTION")
    assert rejection is not None and rejection["reason"] == {"S": "insufficient_stock"}
    assert aws.item("ORDER#ord-1401", "SHIPMENT") is None
    assert aws.stock("SKU-RED-MUG") == (100, 0)
    assert json.loads(record_of(aws, "evt-order-0401")["result"]["S"]) == {
        "outcome": "rejected",
        "reason": "insufficient_stock",
        "skus": ["SKU-RED-MUG"],
    }
    assert aws.dead_letters() == []


def test_logical_duplicate_order_has_no_new_effects(
    aws: AppState, order_events: ModuleType
) -> None:
    process(
        order_events.consumer, sqs_event(sqs_record(order("evt-a", "ord-7", [("SKU-RED-MUG", 2)])))
    )
    domain_before = aws.scan(aws.domain)
    again = sqs_record(order("evt-b", "ord-7", [("SKU-RED-MUG", 2)]))
    (result,) = process(order_events.consumer, sqs_event(again))
    assert result.outcome is Outcome.BUSINESS_OUTCOME
    assert aws.scan(aws.domain) == domain_before
    assert json.loads(record_of(aws, "evt-b")["result"]["S"]) == {"outcome": "logical_duplicate"}


def test_a_failed_record_is_claimable_by_a_fixed_replay(
    aws: AppState, order_events: ModuleType
) -> None:
    broken = dict(order("evt-fix", "ord-fix"), total_cents=-1)
    (first,) = process(order_events.consumer, sqs_event(sqs_record(json.dumps(broken))))
    assert first.outcome is Outcome.DEAD_LETTERED
    assert record_of(aws, "evt-fix")["status"] == {"S": "FAILED"}
    fixed = sqs_record(order("evt-fix", "ord-fix"))
    (second,) = process(order_events.consumer, sqs_event(fixed))
    assert second.outcome is Outcome.COMMITTED
    record = record_of(aws, "evt-fix")
    assert record["status"] == {"S": "COMPLETED"}
    assert "gsi_open_pk" not in record
    assert aws.stock("SKU-RED-MUG") == (99, 1)


def test_an_expired_completed_record_is_treated_as_absent(
    aws: AppState, order_events: ModuleType
) -> None:
    event = load_event("sqs-order-single.json")
    process(order_events.consumer, event)
    aws.dynamodb.update_item(
        TableName=aws.inbox,
        Key={"pk": {"S": f"{ORDER_EVENTS}#evt-order-0001"}},
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 10)}},
    )
    (result,) = process(order_events.consumer, event)
    # Processed again: the order's own conditions make it a logical duplicate, not an inbox hit.
    assert result.outcome is Outcome.BUSINESS_OUTCOME
    record = record_of(aws, "evt-order-0001")
    assert int(record["expires_at"]["N"]) > time.time()
    assert json.loads(record["result"]["S"]) == {"outcome": "logical_duplicate"}
    assert aws.stock("SKU-RED-MUG") == (99, 1)


def test_without_a_dead_letter_queue_poison_is_reported_with_a_clear_detail(
    aws: AppState, monkeypatch: pytest.MonkeyPatch, order_events: ModuleType
) -> None:
    monkeypatch.delenv("DEAD_LETTER_QUEUE_URL")
    module = load_function("order_events")
    event = load_event("sqs-order-poison.json")
    results = process(module.consumer, event)
    poison = results[1:4]
    assert all(r.outcome is Outcome.FAILED for r in poison)
    assert all("no dead-letter queue configured" in r.detail for r in poison)
    assert all("DEAD_LETTER_QUEUE_URL" in r.detail for r in poison)
    assert outcomes([results[0], results[4]]) == [Outcome.COMMITTED, Outcome.COMMITTED]
    assert module.handler(event, None) == {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"][1:4]]
    }
    assert aws.dead_letters() == []


def test_missing_inbox_table_fails_every_record_and_dead_letters_nothing(
    aws: AppState, monkeypatch: pytest.MonkeyPatch, order_events: ModuleType
) -> None:
    monkeypatch.setenv("INBOX_TABLE", "no-such-table")
    module = load_function("order_events")
    event = load_event("sqs-order-poison.json")
    results = process(module.consumer, event)
    assert {(r.outcome, r.error_code) for r in results} == {(Outcome.FAILED, "inbox_unavailable")}
    assert module.handler(event, None) == {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]
    }
    assert aws.dead_letters() == []
    assert all_stock(aws)["SKU-BLUE-CAP"] == (100, 0)


def test_fifo_sample_commits_in_order(aws: AppState, order_events: ModuleType) -> None:
    assert order_events.handler(load_event("sqs-order-fifo.json"), None) == {
        "batchItemFailures": []
    }
    assert all_stock(aws) == {
        "SKU-RED-MUG": (98, 2),
        "SKU-BLUE-CAP": (97, 3),
        "SKU-GREEN-PEN": (98, 2),
    }
