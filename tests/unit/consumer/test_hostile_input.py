"""Hostile input, one category at a time: one bad record never takes the batch down, every value
sent to DynamoDB or SQS passes their validation, and the original stays recoverable."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import (
    ORDER_QUEUE_ARN,
    SENDER_ID,
    kafka_event,
    replayed,
    sqs_event,
    sqs_record,
    sqs_record_from,
    string_attribute,
)
from devkit.events import kafka_record as record
from lambda_inbox import InboxConsumer, UnitOfWork
from lambda_inbox._errors import MalformedRecord, UnsupportedEvent
from lambda_inbox._sources.identity import MAX_KEY_BYTES
from lambda_inbox_tools.testing.limits import enforce_dynamodb_key_limits, enforce_sqs_limits


def put_item(body: dict[str, Any], uow: UnitOfWork) -> None:
    uow.put("domain", {"pk": f"ITEM#{body.get('id')}", "sk": "V", "note": str(body.get("note"))})


def consumer(aws: AppState, key: str | None = "id") -> InboxConsumer[Any]:
    enforce_sqs_limits(aws.sqs)
    enforce_dynamodb_key_limits(aws.dynamodb)
    return aws.consumer("hostile", model=dict, decide=put_item, key=key)


def valid(n: int) -> str:
    return json.dumps({"id": f"ok-{n}", "note": "fine"})


def committed(aws: AppState, *ids: str) -> bool:
    return all(aws.item(f"ITEM#{id_}", "V") is not None for id_ in ids)


# --- exceptions stay with their record ------------------------------------------------------


@pytest.mark.parametrize(
    "hostile",
    [
        "[" * 50_000 + "]" * 50_000,  # RecursionError while parsing
        '{"id": "\\ud800", "note": "x"}',  # lone surrogate in the key
        '{"id": "s-1", "note": "\\udfff"}',  # lone surrogate in a written value
        '{"id": {"nested": [1, 2]}, "note": 1}',  # a key that is not a scalar
    ],
    ids=["deep", "surrogate-key", "surrogate-value", "object-key"],
)
def test_a_hostile_sqs_body_is_dead_lettered_and_the_rest_commits(
    aws: AppState, hostile: str
) -> None:
    inbox = consumer(aws)
    event = sqs_event(sqs_record(valid(1)), sqs_record(hostile), sqs_record(valid(2)))
    assert inbox.handle(event) == {"batchItemFailures": []}
    assert committed(aws, "ok-1", "ok-2")
    (dead,) = aws.dead_letters()
    assert replayed(dead).body == hostile.encode("utf-8")


# --- Kafka records AWS really sends ----------------------------------------------------------


def test_a_kafka_tombstone_is_dead_lettered_with_a_body_sqs_accepts(aws: AppState) -> None:
    inbox = consumer(aws)
    tombstone = record(0, 5, None, key=b"customer-9")
    empty = {**record(0, 6, None), "value": ""}
    event = kafka_event(
        [record(0, 4, {"id": "ok-1"}), tombstone, empty, record(0, 7, {"id": "ok-2"})]
    )
    assert inbox.handle(event) == {"batchItemFailures": []}
    assert committed(aws, "ok-1", "ok-2")
    dead = {m["MessageAttributes"]["kafka-offset"]["StringValue"]: m for m in aws.dead_letters()}
    assert set(dead) == {"5", "6"}
    for letter in dead.values():
        assert letter["MessageAttributes"]["inbox-body-encoding"]["StringValue"] == "empty"
        assert replayed(letter).body == b""
    assert dead["5"]["MessageAttributes"]["kafka-tombstone"]["StringValue"] == "true"
    assert dead["5"]["MessageAttributes"]["kafka-key"]["StringValue"] == "customer-9"
    assert "kafka-tombstone" not in dead["6"]["MessageAttributes"]


def test_signed_byte_headers_are_read_and_an_idempotency_key_with_them_holds(
    aws: AppState,
) -> None:
    inbox = consumer(aws, key=None)
    key = "clé-1".encode()  # é is 0xC3 0xA9: negative as Java bytes
    signed = [byte - 256 if byte > 127 else byte for byte in key]

    def delivery(offset: int) -> dict[str, Any]:
        raw = record(0, offset, {"id": f"k-{offset}"})
        raw["headers"] = [{"idempotency-key": signed}, {"trace": [-1, -2, 0]}]
        return raw

    assert inbox.handle(kafka_event([delivery(1), delivery(2)])) == {"batchItemFailures": []}
    assert committed(aws, "k-1")
    assert not committed(aws, "k-2")  # the same message, redelivered by the producer: skipped
    results = inbox.process(inbox.sources[0].messages(kafka_event([delivery(3)])))
    assert results[0].message_key == "clé-1"


def test_non_utf8_headers_of_a_dead_letter_are_kept_as_base64(aws: AppState) -> None:
    inbox = consumer(aws)
    raw = record(0, 1, b"not json")
    raw["headers"] = [{"trace": [-1, -2, 0]}, {"text": [104, 105]}]
    assert inbox.handle(kafka_event([raw])) == {"batchItemFailures": []}
    (dead,) = aws.dead_letters()
    attributes = dead["MessageAttributes"]
    assert json.loads(attributes["kafka-headers"]["StringValue"]) == {"text": "hi"}
    binary = json.loads(attributes["kafka-headers-base64"]["StringValue"])
    assert base64.b64decode(binary["trace"]) == b"\xff\xfe\x00"


@pytest.mark.parametrize("value", ["\ud800!", "not base64 \x00", 12, {"a": 1}, ["x"]], ids=repr)
def test_a_kafka_value_that_is_not_base64_is_dead_lettered_as_delivered(
    aws: AppState, value: object
) -> None:
    inbox = consumer(aws)
    hostile = {**record(0, 2, None), "value": value}
    event = kafka_event([record(0, 1, {"id": "ok-1"}), hostile, record(0, 3, {"id": "ok-2"})])
    assert inbox.handle(event) == {"batchItemFailures": []}
    assert committed(aws, "ok-1", "ok-2")
    (dead,) = aws.dead_letters()
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "undecodable_body"
    expected = value if isinstance(value, str) else json.dumps(value)
    assert replayed(dead).body == expected.encode("utf-8", "surrogatepass")


# --- bounded and valid values ----------------------------------------------------------------


def test_control_characters_in_attributes_are_escaped_and_recovered_on_replay(
    aws: AppState,
) -> None:
    inbox = consumer(aws, key=None)
    attributes = {
        "idempotency-key": string_attribute("a\x00b\x1f"),
        "trace": string_attribute("\ud800"),
    }
    event = sqs_event(sqs_record("not json", message_attributes=attributes))
    assert inbox.handle(event) == {"batchItemFailures": []}
    (dead,) = aws.dead_letters()
    assert dead["MessageAttributes"]["inbox-message-key"]["DataType"] == "String.inbox-escaped"
    recovered = dict(replayed(dead).attributes)
    assert recovered["idempotency-key"] == "a\x00b\x1f"
    assert recovered["trace"] == "\ud800"
    assert recovered["inbox-message-key"] == f"{SENDER_ID}/a\x00b\x1f"


def test_a_replayed_dead_letter_with_a_huge_message_key_gets_a_bounded_key(
    aws: AppState,
) -> None:
    inbox = consumer(aws)
    attributes = {"inbox-message-key": string_attribute(f"{SENDER_ID}/" + "k" * 5000)}
    event = sqs_event(
        sqs_record("still not json", message_attributes=attributes), sqs_record(valid(1))
    )
    assert inbox.handle(event) == {"batchItemFailures": []}
    assert committed(aws, "ok-1")
    (dead,) = aws.dead_letters()
    key = dead["MessageAttributes"]["inbox-message-key"]["StringValue"]
    space, _, bounded = key.partition("/")
    assert space == SENDER_ID
    assert bounded.startswith("sha256:") and len(bounded.encode()) <= MAX_KEY_BYTES


def test_a_huge_kafka_value_and_headers_fit_in_one_dead_letter_and_stay_recoverable(
    aws: AppState,
) -> None:
    inbox = consumer(aws)
    body = b"x" * 600_000  # not JSON, beyond SQS's 256 KiB but compressible
    raw = record(0, 1, body, headers={f"h{n}": b"v" * 100_000 for n in range(3)})
    assert inbox.handle(kafka_event([raw])) == {"batchItemFailures": []}
    (dead,) = aws.dead_letters()
    assert dead["MessageAttributes"]["inbox-body-encoding"]["StringValue"] == "zlib+base64"
    assert replayed(dead).body == body


def test_an_incompressible_oversize_value_is_truncated_with_its_digest(aws: AppState) -> None:
    import hashlib
    import random

    inbox = consumer(aws)
    body = random.Random(7).randbytes(400_000)
    assert inbox.handle(kafka_event([record(0, 1, body)])) == {"batchItemFailures": []}
    (dead,) = aws.dead_letters()
    attributes = dead["MessageAttributes"]
    assert attributes["inbox-body-encoding"]["StringValue"] == "truncated+base64"
    assert attributes["inbox-body-sha256"]["StringValue"] == hashlib.sha256(body).hexdigest()
    assert attributes["kafka-offset"]["StringValue"] == "1"  # where the original still is
    assert body.startswith(replayed(dead).body)
    # Replayed, the truncated dead letter is poison again, not processed as if whole.
    results = inbox.process(
        inbox.sources[1].messages(sqs_event(sqs_record_from(dead, arn=ORDER_QUEUE_ARN)))
    )
    assert results[0].error_code == "undecodable_body"


# --- events of the wrong shape ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "said"),
    [(None, "None"), ([], "a list"), ("{}", "a str"), (7, "a int"), ({"x": 1}, r"keys \[x\]")],
)
def test_an_event_of_the_wrong_shape_raises_unsupported_event(
    aws: AppState, event: object, said: str
) -> None:
    with pytest.raises(UnsupportedEvent, match=said):
        consumer(aws).handle(event)  # type: ignore[arg-type]


def test_an_sqs_record_without_message_id_fails_the_invocation_with_malformed_record(
    aws: AppState,
) -> None:
    record_ = sqs_record(valid(1))
    del record_["messageId"]
    with pytest.raises(MalformedRecord, match="messageId"):
        consumer(aws).handle(sqs_event(record_))


@pytest.mark.parametrize(
    "field",
    [
        {"attributes": ["x"]},
        {"messageAttributes": ["x"]},
        {"messageAttributes": {"a": {"stringValue": 5, "dataType": "String"}}},
        {"attributes": {"MessageDeduplicationId": 9, "MessageGroupId": ["g"]}},
        {"eventSourceARN": 42},
        {"body": None},
    ],
    ids=lambda field: next(iter(field)),
)
def test_sqs_fields_of_the_wrong_type_stay_with_their_record(
    aws: AppState, field: dict[str, Any]
) -> None:
    inbox = consumer(aws)
    event = sqs_event(sqs_record(valid(1)), {**sqs_record(valid(2)), **field})
    assert inbox.handle(event) == {"batchItemFailures": []}
    assert committed(aws, "ok-1")
