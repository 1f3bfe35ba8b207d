"""The processing model through a small InboxConsumer defined here, on moto.

The handler counts hits per message id in the domain table and misbehaves on request
(`"action"` in the payload), so every branch of the engine can be reached with real writes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from lambda_inbox import (
    ConditionFailures,
    InboxConfig,
    InboxConsumer,
    MessageResult,
    Outcome,
    PoisonMessage,
    UnitOfWork,
    UnsupportedEvent,
)
from lambda_inbox.config import FifoFailureMode
from lambda_inbox.sqs import parse_sqs_event
from tests.unit.conftest import MotoAws
from tests.unit.helpers import (
    FIFO_ARN,
    domain_item,
    drain,
    inbox_item,
    sqs_event,
    sqs_record,
    string_attribute,
)

CONSUMER = "unit-consumer"
Fallback = Callable[[dict[str, Any], ConditionFailures, UnitOfWork], object]


def make_consumer(
    aws: MotoAws,
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
    config = InboxConfig(
        consumer=CONSUMER,
        inbox_table=aws.inbox,
        dead_letter_queue_url=queue,
        fifo_failure_mode=fifo_mode,
    )
    return InboxConsumer(
        CONSUMER,
        model=dict,
        decide=decide,
        on_condition_failed=fallback,
        key=key,
        config=config,
        dynamodb=aws.dynamodb,
        sqs=aws.sqs,
    )


def body(message_id: str, action: str = "count", **extra: Any) -> str:
    return json.dumps({"id": message_id, "action": action, **extra})


def hits(aws: MotoAws, message_id: str) -> int:
    item = domain_item(aws.dynamodb, aws.domain, f"COUNT#{message_id}", "C")
    return int(item["hits"]["N"]) if item else 0


def run(consumer: InboxConsumer[dict[str, Any]], event: dict[str, Any]) -> list[MessageResult]:
    fifo_mode = consumer.config.fifo_failure_mode
    return consumer.process(parse_sqs_event(event, fifo_failure_mode=fifo_mode))


def summary(results: list[MessageResult]) -> list[tuple[Outcome, str | None]]:
    return [(result.outcome, result.error_code) for result in results]


def record(aws: MotoAws, key: str) -> dict[str, Any] | None:
    return inbox_item(aws.dynamodb, aws.inbox, CONSUMER, key)


def test_commit_writes_effects_and_inbox_record_together(aws: MotoAws) -> None:
    consumer = make_consumer(aws)
    event = sqs_event(*(sqs_record(body(f"m{index}")) for index in range(3)))
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    assert [hits(aws, f"m{index}") for index in range(3)] == [1, 1, 1]
    stored = record(aws, "m0")
    assert stored is not None
    assert stored["status"] == {"S": "COMPLETED"}
    assert json.loads(stored["result"]["S"]) == {"outcome": "counted"}
    assert stored["source"] == {"S": event["Records"][0]["eventSourceARN"]}


def test_generic_handler_error_is_reported_and_nothing_is_dead_lettered(aws: MotoAws) -> None:
    consumer = make_consumer(aws)
    failing = sqs_record(body("bad", "raise"))
    event = sqs_event(sqs_record(body("ok1")), failing, sqs_record(body("ok2")))
    results = run(consumer, event)
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.FAILED, "handler_error"),
        (Outcome.COMMITTED, None),
    ]
    assert "RuntimeError: downstream outage" in results[1].detail
    assert consumer.handle(event, None) == {
        "batchItemFailures": [{"itemIdentifier": failing["messageId"]}]
    }
    assert drain(aws.sqs, aws.dlq_url) == []
    assert record(aws, "bad") is None
    assert (hits(aws, "ok1"), hits(aws, "ok2")) == (1, 1)


def test_poison_message_raised_by_the_handler_is_dead_lettered(aws: MotoAws) -> None:
    consumer = make_consumer(aws)
    poison = sqs_record(
        body("p1", "poison"), message_attributes={"trace-id": string_attribute("t-1")}
    )
    event = sqs_event(poison, sqs_record(body("ok")))
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    (dead,) = drain(aws.sqs, aws.dlq_url)
    assert dead["Body"] == poison["body"]
    assert dead["MessageAttributes"] == {
        "trace-id": {"DataType": "String", "StringValue": "t-1"},
        "inbox-error-code": {"DataType": "String", "StringValue": "custom_code"},
        "inbox-error": {"DataType": "String", "StringValue": "this can never work"},
        "inbox-message-key": {"DataType": "String", "StringValue": "p1"},
    }
    stored = record(aws, "p1")
    assert stored is not None and stored["status"] == {"S": "FAILED"}
    assert stored["error_code"] == {"S": "custom_code"}
    assert (hits(aws, "p1"), hits(aws, "ok")) == (0, 1)


def test_invalid_writes_are_dead_lettered(aws: MotoAws) -> None:
    consumer = make_consumer(aws)
    (result,) = run(consumer, sqs_event(sqs_record(body("f1", "float"))))
    assert (result.outcome, result.error_code) == (Outcome.DEAD_LETTERED, "invalid_writes")
    assert "Decimal" in result.detail
    (dead,) = drain(aws.sqs, aws.dlq_url)
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "invalid_writes"
    assert domain_item(aws.dynamodb, aws.domain, "P", "S") is None


def test_model_rejection_is_invalid_payload(aws: MotoAws) -> None:
    def strict(raw: Any) -> dict[str, Any]:
        if "amount" not in raw:
            raise ValueError("amount is required")
        return dict(raw)

    consumer = InboxConsumer(
        CONSUMER,
        model=strict,
        decide=lambda payload, uow: None,
        key="id",
        config=InboxConfig(
            consumer=CONSUMER, inbox_table=aws.inbox, dead_letter_queue_url=aws.dlq_url
        ),
        dynamodb=aws.dynamodb,
        sqs=aws.sqs,
    )
    (result,) = run(consumer, sqs_event(sqs_record(body("v1"))))
    assert (result.outcome, result.error_code) == (Outcome.DEAD_LETTERED, "invalid_payload")
    assert "amount is required" in result.detail


def test_condition_failure_without_fallback_is_dead_lettered(aws: MotoAws) -> None:
    consumer = make_consumer(aws)
    event = sqs_event(
        sqs_record(body("ok1")), sqs_record(body("c1", "require")), sqs_record(body("ok2"))
    )
    results = run(consumer, event)
    # The two bystanders shared the cancelled transaction and are committed on the next round.
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.DEAD_LETTERED, "condition_failed"),
        (Outcome.COMMITTED, None),
    ]
    assert "must-exist" in results[1].detail
    assert "no on_condition_failed handler" in results[1].detail
    (dead,) = drain(aws.sqs, aws.dlq_url)
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "condition_failed"
    assert (hits(aws, "ok1"), hits(aws, "c1"), hits(aws, "ok2")) == (1, 0, 1)
    stored = record(aws, "c1")
    assert stored is not None and stored["status"] == {"S": "FAILED"}


def test_condition_failure_with_fallback_commits_a_business_outcome(aws: MotoAws) -> None:
    received: list[ConditionFailures] = []

    def fallback(payload: dict[str, Any], failed: ConditionFailures, uow: UnitOfWork) -> None:
        received.append(failed)
        uow.put(aws.domain, {"pk": f"REJECTED#{payload['id']}", "sk": "R", "why": "missing"})
        uow.set_result(outcome="rejected")

    consumer = make_consumer(aws, fallback=fallback)
    (result,) = run(consumer, sqs_event(sqs_record(body("c2", "require"))))
    assert result.outcome is Outcome.BUSINESS_OUTCOME
    (failures,) = received
    assert failures.labels == frozenset({"must-exist"})
    assert domain_item(aws.dynamodb, aws.domain, "REJECTED#c2", "R") is not None
    assert hits(aws, "c2") == 0
    stored = record(aws, "c2")
    assert stored is not None
    assert json.loads(stored["result"]["S"]) == {"outcome": "rejected"}


def test_fallback_raising_poison_is_dead_lettered(aws: MotoAws) -> None:
    def fallback(payload: dict[str, Any], failed: ConditionFailures, uow: UnitOfWork) -> None:
        raise PoisonMessage("no way out", code="no_fallback")

    consumer = make_consumer(aws, fallback=fallback)
    (result,) = run(consumer, sqs_event(sqs_record(body("c3", "require"))))
    assert (result.outcome, result.error_code) == (Outcome.DEAD_LETTERED, "no_fallback")


def test_in_batch_follower_of_a_failed_leader_fails_too(aws: MotoAws) -> None:
    consumer = make_consumer(aws)
    leader = sqs_record(body("same", "raise"))
    follower = sqs_record(leader["body"])
    results = run(consumer, sqs_event(leader, follower))
    assert summary(results) == [
        (Outcome.FAILED, "handler_error"),
        (Outcome.FAILED, "leader_failed"),
    ]


def test_in_batch_follower_of_a_dead_lettered_leader_is_a_duplicate(aws: MotoAws) -> None:
    seen: list[str] = []
    consumer = make_consumer(aws, seen=seen)
    leader = sqs_record(body("same", "poison"))
    results = run(consumer, sqs_event(leader, sqs_record(leader["body"])))
    assert summary(results) == [
        (Outcome.DEAD_LETTERED, "custom_code"),
        (Outcome.DUPLICATE, None),
    ]
    assert seen == ["same"]  # the follower was not handled again
    assert len(drain(aws.sqs, aws.dlq_url)) == 1


def test_a_failed_record_is_claimed_by_a_replay_after_a_fix(aws: MotoAws) -> None:
    poison = sqs_record(body("r1", "poison"))
    (first,) = run(make_consumer(aws), sqs_event(poison))
    assert first.outcome is Outcome.DEAD_LETTERED
    (dead,) = drain(aws.sqs, aws.dlq_url)
    # The DLQ copy is redriven to the source queue and processed by the fixed handler.
    replay = sqs_record(
        dead["Body"],
        message_attributes={
            name: string_attribute(value["StringValue"])
            for name, value in dead["MessageAttributes"].items()
        },
    )
    (second,) = run(make_consumer(aws, broken=False), sqs_event(replay))
    assert second.outcome is Outcome.COMMITTED
    stored = record(aws, "r1")
    assert stored is not None and stored["status"] == {"S": "COMPLETED"}
    assert hits(aws, "r1") == 1


def test_an_expired_completed_record_is_processed_again(aws: MotoAws) -> None:
    consumer = make_consumer(aws)
    event = sqs_event(sqs_record(body("e1")))
    assert summary(run(consumer, event)) == [(Outcome.COMMITTED, None)]
    assert summary(run(consumer, event)) == [(Outcome.DUPLICATE, None)]
    aws.dynamodb.update_item(
        TableName=aws.inbox,
        Key={"pk": {"S": f"{CONSUMER}#e1"}},
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 1)}},
    )
    assert summary(run(consumer, event)) == [(Outcome.COMMITTED, None)]
    assert hits(aws, "e1") == 2


def test_without_a_dead_letter_queue_poison_is_a_failure(aws: MotoAws) -> None:
    consumer = make_consumer(aws, dlq=None)
    poison = sqs_record(body("p", "poison"))
    results = run(consumer, sqs_event(poison))
    assert summary(results) == [(Outcome.FAILED, "custom_code")]
    assert "no dead-letter queue configured: set DEAD_LETTER_QUEUE_URL" in results[0].detail
    assert record(aws, "p") is None
    assert consumer.handle(sqs_event(poison), None) == {
        "batchItemFailures": [{"itemIdentifier": poison["messageId"]}]
    }


def test_dead_letter_failure_is_reported_for_redelivery(aws: MotoAws) -> None:
    missing_queue = aws.dlq_url.rsplit("/", 1)[0] + "/no-such-queue"
    consumer = make_consumer(aws, dlq=missing_queue)
    (result,) = run(consumer, sqs_event(sqs_record(body("p", "poison"))))
    assert (result.outcome, result.error_code) == (Outcome.FAILED, "dead_letter_failed")
    assert record(aws, "p") is None


def fifo_batch() -> list[dict[str, Any]]:
    """g1:a ok, g2:b fails, g1:c ok, g2:d ok."""
    return [
        sqs_record(body("a"), arn=FIFO_ARN, group="g1", dedup="a"),
        sqs_record(body("b", "raise"), arn=FIFO_ARN, group="g2", dedup="b"),
        sqs_record(body("c"), arn=FIFO_ARN, group="g1", dedup="c"),
        sqs_record(body("d"), arn=FIFO_ARN, group="g2", dedup="d"),
    ]


def test_fifo_stop_mode_reports_every_later_record_unprocessed(aws: MotoAws) -> None:
    seen: list[str] = []
    consumer = make_consumer(aws, seen=seen, fifo_mode="stop")
    records = fifo_batch()
    results = run(consumer, sqs_event(*records))
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.FAILED, "handler_error"),
        (Outcome.SKIPPED, None),
        (Outcome.SKIPPED, None),
    ]
    assert seen == ["a", "b"]
    assert [hits(aws, name) for name in "acd"] == [1, 0, 0]


def test_fifo_stop_mode_response_lists_the_failed_record_and_all_later_ones(aws: MotoAws) -> None:
    consumer = make_consumer(aws, fifo_mode="stop")
    records = fifo_batch()
    assert consumer.handle(sqs_event(*records), None) == {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records[1:]]
    }
    assert hits(aws, "a") == 1


def test_fifo_skip_group_mode_holds_back_only_that_group(aws: MotoAws) -> None:
    seen: list[str] = []
    consumer = make_consumer(aws, seen=seen, fifo_mode="skip-group")
    records = fifo_batch()
    results = run(consumer, sqs_event(*records))
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.FAILED, "handler_error"),
        (Outcome.COMMITTED, None),
        (Outcome.SKIPPED, None),
    ]
    assert seen == ["a", "b", "c"]
    assert [hits(aws, name) for name in "acd"] == [1, 1, 0]
    fresh = fifo_batch()
    assert make_consumer(aws, fifo_mode="skip-group").handle(sqs_event(*fresh), None) == {
        "batchItemFailures": [
            {"itemIdentifier": fresh[1]["messageId"]},
            {"itemIdentifier": fresh[3]["messageId"]},
        ]
    }


def test_fifo_poison_does_not_stop_the_queue(aws: MotoAws) -> None:
    consumer = make_consumer(aws, dlq="fifo", fifo_mode="stop")
    records = [
        sqs_record(body("x", "poison"), arn=FIFO_ARN, group="g1", dedup="x"),
        sqs_record(body("y"), arn=FIFO_ARN, group="g1", dedup="y"),
    ]
    assert summary(run(consumer, sqs_event(*records))) == [
        (Outcome.DEAD_LETTERED, "custom_code"),
        (Outcome.COMMITTED, None),
    ]
    (dead,) = drain(aws.sqs, aws.fifo_dlq_url)
    assert dead["Attributes"]["MessageGroupId"] == "g1"


def test_callable_key_extractor(aws: MotoAws) -> None:
    consumer = make_consumer(aws, key=lambda payload: f"{payload['id']}-v2")
    (result,) = run(consumer, sqs_event(sqs_record(body("k1"))))
    assert (result.outcome, result.message_key) == (Outcome.COMMITTED, "k1-v2")
    assert record(aws, "k1-v2") is not None


def test_idempotency_key_attribute_without_an_extractor(aws: MotoAws) -> None:
    consumer = make_consumer(aws, key=None)
    attributes = {"idempotency-key": string_attribute("idem-7")}
    first = sqs_record(body("i1"), message_attributes=attributes)
    second = sqs_record(body("i1"), message_attributes=attributes)
    results = run(consumer, sqs_event(first, second))
    assert [(r.outcome, r.message_key) for r in results] == [
        (Outcome.COMMITTED, "idem-7"),
        (Outcome.DUPLICATE, "idem-7"),
    ]


@pytest.mark.parametrize(
    "event",
    [
        {"foo": "bar"},
        {"Records": [{"eventSource": "aws:sns", "Sns": {}}]},
        {"Records": [sqs_record("{}"), {"eventSource": "aws:s3"}]},
    ],
)
def test_unsupported_events_raise(aws: MotoAws, event: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedEvent, match="expected an SQS event"):
        make_consumer(aws).handle(event, None)


def test_empty_records_is_an_empty_response_without_requests(aws: MotoAws) -> None:
    consumer = make_consumer(aws)
    calls: list[str] = []
    consumer.dynamodb.meta.events.register(
        "before-call.dynamodb", lambda model, **_: calls.append(model.name)
    )
    assert consumer.handle({"Records": []}, None) == {"batchItemFailures": []}
    assert consumer.process([], None) == []
    assert calls == []


def test_missing_inbox_table_fails_the_whole_batch(aws: MotoAws) -> None:
    config = InboxConfig(
        consumer=CONSUMER, inbox_table="missing", dead_letter_queue_url=aws.dlq_url
    )
    consumer = InboxConsumer(
        CONSUMER,
        model=dict,
        decide=lambda p, u: None,
        key="id",
        config=config,
        dynamodb=aws.dynamodb,
        sqs=aws.sqs,
    )
    records = [sqs_record(body("a")), sqs_record("{not json")]
    assert consumer.handle(sqs_event(*records), None) == {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records]
    }
    assert drain(aws.sqs, aws.dlq_url) == []


def test_a_raising_key_extractor_dead_letters_only_that_message(aws: MotoAws) -> None:
    consumer = make_consumer(aws, key=lambda payload: payload["event_id"])
    without_key = sqs_record(body("n1"), message_id="mid-without-key")
    with_key = sqs_record(json.dumps({"id": "n2", "event_id": "evt-n2"}))
    assert consumer.handle(sqs_event(without_key, with_key), None) == {"batchItemFailures": []}
    (dead,) = drain(aws.sqs, aws.dlq_url)
    assert dead["Body"] == without_key["body"]
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "missing_key"
    assert dead["MessageAttributes"]["inbox-message-key"]["StringValue"] == "mid-without-key"
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
    aws: MotoAws, model: Callable[[Any], Any], bad_body: str
) -> None:
    config = InboxConfig(
        consumer=CONSUMER, inbox_table=aws.inbox, dead_letter_queue_url=aws.dlq_url
    )
    consumer = InboxConsumer(
        CONSUMER,
        model=model,
        decide=lambda payload, uow: None,
        key="id",
        config=config,
        dynamodb=aws.dynamodb,
        sqs=aws.sqs,
    )
    good = sqs_record('{"id": "a", "amount": 1}')
    results = run(consumer, sqs_event(good, sqs_record(bad_body)))
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.DEAD_LETTERED, "invalid_payload"),
    ]
    (dead,) = drain(aws.sqs, aws.dlq_url)
    assert dead["Body"] == bad_body


def write_consumer(aws: MotoAws, table_for: dict[str, str]) -> InboxConsumer[dict[str, Any]]:
    """Each message updates one item; `table_for` / ids pick invalid writes on purpose."""

    def decide(payload: dict[str, Any], uow: UnitOfWork) -> None:
        message_id = payload["id"]
        table = table_for.get(message_id, aws.domain)
        expression = "SET a = :v ADD" if message_id.startswith("syntax") else "SET a = :v"
        uow.update(table, {"pk": message_id, "sk": "Y"}, expression, values={":v": 1})

    config = InboxConfig(
        consumer=CONSUMER, inbox_table=aws.inbox, dead_letter_queue_url=aws.dlq_url
    )
    return InboxConsumer(
        CONSUMER,
        model=dict,
        decide=decide,
        key="id",
        config=config,
        dynamodb=aws.dynamodb,
        sqs=aws.sqs,
    )


def test_a_rejected_group_is_split_and_only_the_culprit_dead_lettered(aws: MotoAws) -> None:
    consumer = write_consumer(aws, {})
    calls: list[str] = []
    consumer.dynamodb.meta.events.register(
        "before-call.dynamodb", lambda model, **_: calls.append(model.name)
    )
    ids = ["a", "syntax-error", "b"]
    results = run(consumer, sqs_event(*(sqs_record(json.dumps({"id": i})) for i in ids)))
    assert summary(results) == [
        (Outcome.COMMITTED, None),
        (Outcome.DEAD_LETTERED, "write_rejected"),
        (Outcome.COMMITTED, None),
    ]
    assert "ValidationException" in results[1].detail
    # One read, the rejected group, then every message alone; plus the FAILED record.
    assert calls == ["BatchGetItem"] + ["TransactWriteItems"] * 4 + ["PutItem"]
    assert domain_item(aws.dynamodb, aws.domain, "a", "Y") is not None
    assert domain_item(aws.dynamodb, aws.domain, "syntax-error", "Y") is None
    (dead,) = drain(aws.sqs, aws.dlq_url)
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "write_rejected"


def test_a_missing_domain_table_is_reported_not_dead_lettered(aws: MotoAws) -> None:
    consumer = write_consumer(aws, {"x": "no-such-table"})
    record_x = sqs_record(json.dumps({"id": "x"}))
    results = run(consumer, sqs_event(record_x))
    assert summary(results) == [(Outcome.FAILED, "dynamodb_unavailable")]
    assert "ResourceNotFoundException" in results[0].detail
    assert consumer.handle(sqs_event(record_x), None) == {
        "batchItemFailures": [{"itemIdentifier": record_x["messageId"]}]
    }
    assert drain(aws.sqs, aws.dlq_url) == []
    assert record(aws, "x") is None
