"""The defects the reference model of every record's fate found (tests/unit/fates/test_batch_semantics.py
against tests/outcome_model.py), each as its shrunk example: one record's trouble stays with that
record, and each record ends as docs/concepts.md ("Every record's fate") says."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import replayed
from lambda_inbox import ConditionFailures, Decide, InboxConsumer, MessageResult, UnitOfWork
from lambda_inbox_tools.testing.events import kafka_event, kafka_record, sqs_event, sqs_record
from lambda_inbox_tools.testing.stream_events import kinesis_event, kinesis_record
from lambda_inbox_tools.testing.values import json_value

#: One digit past Python's integer-string limit (`sys.get_int_max_str_digits()`, 4,300).
LONG_NUMBER = b'{"id": "long", "n": ' + b"9" * 4301 + b"}"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, in_memory_aws: AppState) -> AppState:
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "CRITICAL")
    return in_memory_aws


def put(body: dict[str, Any], uow: UnitOfWork) -> None:
    uow.put("domain", {"pk": f"ITEM#{body['id']}", "sk": "V", "v": int(body.get("v", 0))})


def source_of(event: dict[str, Any], consumer: InboxConsumer[Any]) -> Any:
    """The consumer's source for `event`, as `handle` picks it."""
    return next(source for source in consumer.sources if source.matches(event))


def run(consumer: InboxConsumer[Any], event: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Each record's outcome and code, as `handle` would leave them."""
    results: list[MessageResult] = consumer.process(source_of(event, consumer).messages(event))
    return [(result.outcome.value, result.error_code) for result in results]


def dead_letters(aws: AppState) -> list[tuple[str, bytes]]:
    return [
        (letter["MessageAttributes"]["inbox-error-code"]["StringValue"], replayed(letter).body)
        for letter in aws.dead_letters()
    ]


EVENTS: dict[str, Callable[[bytes, bytes], dict[str, Any]]] = {
    "sqs": lambda bad, good: sqs_event(sqs_record(bad.decode()), sqs_record(good.decode())),
    "kafka": lambda bad, good: kafka_event([kafka_record(0, 1, bad), kafka_record(0, 2, good)]),
    "kafka-framed": lambda bad, good: kafka_event(
        [kafka_record(0, 1, b"\0\0\0\0\7" + bad), kafka_record(0, 2, json_value(json.loads(good)))]
    ),
    "kinesis": lambda bad, good: kinesis_event([kinesis_record(1, bad), kinesis_record(2, good)]),
}


@pytest.mark.parametrize("key", ["id", None], ids=["key-from-body", "delivery-id"])
@pytest.mark.parametrize("source", list(EVENTS))
def test_a_number_past_the_integer_string_limit_is_poison_not_a_failed_batch(
    aws: AppState, source: str, key: str | None
) -> None:
    """`json.loads` raises ValueError (not JSONDecodeError) for it: `handle()` raised before, and
    every record of the batch was retried (a Kafka partition or a shard blocked on each retry)."""
    consumer = aws.consumer("long", model=dict, decide=put, key=key)
    good = json.dumps({"id": "fine"}).encode()
    assert run(consumer, EVENTS[source](LONG_NUMBER, good)) == [
        ("dead_lettered", "malformed_json"),
        ("committed", None),
    ]
    [(code, body)] = dead_letters(aws)
    assert code == "malformed_json" and body.endswith(LONG_NUMBER)


def test_the_stored_payload_sent_again_after_a_conflict_in_one_batch_is_a_duplicate(
    aws: AppState,
) -> None:
    """P1 committed under K; then [P2 under K, P1 under K]: the follower was compared with its
    leader's payload (P2) rather than with the stored record (P1), and dead-lettered too."""
    consumer = aws.consumer("conflict", model=dict, decide=put, key="id")
    first, second = {"id": "K", "v": 1}, {"id": "K", "v": 2}
    assert run(consumer, sqs_event(sqs_record(first))) == [("committed", None)]
    assert run(consumer, sqs_event(sqs_record(second), sqs_record(first))) == [
        ("dead_lettered", "fingerprint_mismatch"),
        ("duplicate", None),
    ]
    assert dead_letters(aws) == [
        ("fingerprint_mismatch", json.dumps(second, separators=(",", ":")).encode())
    ]


def test_a_follower_of_a_dead_lettered_payload_stays_its_duplicate_after_a_fix_leads(
    aws: AppState,
) -> None:
    """[P refused, P again, F fixed, under one key]: the second P followed whichever delivery led
    the key when the followers were settled (F), and was dead-lettered as a conflict with it."""
    consumer = aws.consumer("fixes", model=numbered, decide=put, key="id")
    poison, fixed = {"id": "K", "v": "x"}, {"id": "K", "v": 2}
    event = sqs_event(sqs_record(poison), sqs_record(poison), sqs_record(fixed))
    assert run(consumer, event) == [
        ("dead_lettered", "invalid_payload"),
        ("duplicate", None),
        ("committed", None),
    ]
    assert [code for code, _ in dead_letters(aws)] == ["invalid_payload"]


def numbered(body: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(body.get("v"), int):
        raise ValueError("v must be a number")
    return body


def gated(body: dict[str, Any], uow: UnitOfWork) -> None:
    """Rejected (its gate never exists) when `v` is 1."""
    if body["v"] == 1:
        uow.condition_check("domain", {"pk": "GATE", "sk": "GATE"}, "attribute_exists(pk)")
    else:
        put(body, uow)


def test_a_fix_after_a_payload_dead_lettered_while_committing_is_redelivered_not_dead_lettered(
    aws: AppState,
) -> None:
    """Without `on_condition_failed`, [P1 under K: its condition fails, P2 under K]: P2 was
    dead-lettered as a conflict with P1, although nothing was ever completed under K."""
    consumer = aws.consumer("gates", model=dict, decide=gated, key="id")
    rejected, fixed = sqs_record({"id": "K", "v": 1}), sqs_record({"id": "K", "v": 2})
    assert run(consumer, sqs_event(rejected, fixed)) == [
        ("dead_lettered", "condition_failed"),
        ("failed", "leader_failed"),
    ]
    assert [code for code, _ in dead_letters(aws)] == ["condition_failed"]
    assert run(consumer, sqs_event(fixed)) == [("committed", None)]  # its redelivery
    assert aws.item("ITEM#K", "V") is not None


def raising(error: Exception) -> Callable[[Any], Any]:
    def model(body: Any) -> Any:
        if body.get("id") == "bad":
            raise error
        return body

    return model


@pytest.mark.parametrize(
    ("error", "fate"),
    [
        (OverflowError("int too large to convert"), ("dead_lettered", "invalid_payload")),
        (ZeroDivisionError("division by zero"), ("dead_lettered", "invalid_payload")),
        (MemoryError(), ("failed", "handler_error")),
        (RuntimeError("a bug in the model"), ("failed", "handler_error")),
    ],
    ids=["overflow", "zero-division", "memory", "runtime"],
)
def test_an_error_the_model_raises_stays_with_its_record(
    aws: AppState, error: Exception, fate: tuple[str, str]
) -> None:
    """A model (a plain callable: `int(float(body["amount"]))` raises OverflowError for 1e999)
    raising anything but ValueError, TypeError, LookupError, AttributeError or RecursionError
    made `handle()` raise: the whole batch was retried."""
    consumer = aws.consumer("models", model=raising(error), decide=put, key="id")
    event = sqs_event(sqs_record({"id": "bad"}), sqs_record({"id": "good"}))
    assert run(consumer, event) == [fate, ("committed", None)]


def test_a_batch_with_a_rejection_and_its_fix_commits_the_fix_with_on_condition_failed(
    aws: AppState,
) -> None:
    """The control of the case above: with `on_condition_failed`, the leader completes (a
    business outcome) and the fix under its key is a conflict with it."""

    def reject(body: dict[str, Any], failed: ConditionFailures, uow: UnitOfWork) -> None:
        uow.put("domain", {"pk": f"REJECTED#{body['id']}", "sk": "V"})

    consumer = aws.consumer("gated", model=dict, decide=Decide(gated, reject), key="id")
    rejected, fixed = sqs_record({"id": "K", "v": 1}), sqs_record({"id": "K", "v": 2})
    assert run(consumer, sqs_event(rejected, fixed)) == [
        ("business_outcome", None),
        ("dead_lettered", "fingerprint_mismatch"),
    ]
