"""DynamoDB stream images read strictly (lambda_inbox.store._attribute_values.read_attribute_value):
binary as bytes, every attribute value that is not valid DynamoDB JSON poison `malformed_json`
with its original record, and `userIdentity` in the document (moto for the consumer test)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from devkit.app_state import AppState
from lambda_inbox import PoisonMessage
from lambda_inbox.store._attribute_values import MalformedAttributeValue, read_attribute_value
from lambda_inbox.wire import parse_dynamodb_stream_event
from lambda_inbox_tools.testing import dynamodb_stream_event, dynamodb_stream_record

#: Each attribute value that is not DynamoDB JSON, and why.
MALFORMED: list[tuple[object, str]] = [
    ({"S": 5}, "a string, not int"),
    ({"BOOL": "false"}, "true or false"),
    ({"N": "abc"}, "not a DynamoDB number"),
    ({"N": "NaN"}, "not a DynamoDB number"),
    ({"N": "Infinity"}, "not a DynamoDB number"),
    ({"N": "-Infinity"}, "not a DynamoDB number"),
    ({"N": "1" * 39}, "not a DynamoDB number"),  # more than 38 significant digits
    ({"N": 5}, "a string, not int"),
    ({"S": "a", "N": "1"}, "one type key"),
    ({}, "one type key"),
    ("plain", "one type key"),
    ({"X": "?"}, "unknown type"),
    ({"SS": "abc"}, "a set is a list"),
    ({"NS": ["1", "x"]}, "not a DynamoDB number"),
    ({"BS": ["not base64!"]}, "not base64"),
    ({"B": 7}, "a string, not int"),
    ({"NULL": False}, "NULL is always true"),
    ({"L": {"S": "a"}}, "a list, not dict"),
    ({"L": [{"S": 1}]}, r"\.L\[0\]\.S: a string"),
    ({"M": ["a"]}, "an image is an object"),
    ({"M": {"inner": {"BOOL": 1}}}, r"\.M\.inner\.BOOL"),
]


@pytest.mark.parametrize(("value", "why"), MALFORMED)
def test_each_malformed_attribute_value_is_refused_saying_where(value: object, why: str) -> None:
    with pytest.raises(MalformedAttributeValue, match=why):
        read_attribute_value(value, "NewImage.v")


def test_every_type_reads_into_plain_python_values() -> None:
    value = {
        "M": {
            "s": {"S": "text"},
            "n": {"N": "-1.5E+3"},
            "b": {"B": "AAE="},
            "t": {"BOOL": True},
            "z": {"NULL": True},
            "l": {"L": [{"N": "1"}, {"S": "x"}]},
            "ss": {"SS": ["a", "b"]},
            "ns": {"NS": ["1", "2.5"]},
            "bs": {"BS": ["AAE=", "/w=="]},
        }
    }
    read = read_attribute_value(value)
    assert read == {
        "s": "text",
        "n": Decimal("-1500"),
        "b": b"\x00\x01",
        "t": True,
        "z": None,
        "l": [Decimal(1), "x"],
        "ss": {"a", "b"},
        "ns": {Decimal(1), Decimal("2.5")},
        "bs": {b"\x00\x01", b"\xff"},
    }
    # Binary is bytes itself, never a wrapper class a `bytes` model field would refuse.
    assert type(read["b"]) is bytes and {type(m) for m in read["bs"]} == {bytes}


def _record(position: int, value: object) -> dict[str, Any]:
    record = dynamodb_stream_record(position, {"pk": f"k{position}"}, new_image={"pk": "x"})
    record["dynamodb"]["NewImage"]["v"] = value
    return record


def test_a_record_with_a_malformed_value_is_poison_malformed_json() -> None:
    good = dynamodb_stream_record(0, {"pk": "a"}, new_image={"pk": "a", "raw": b"\x00"})
    bad = _record(1, {"BOOL": "false"})
    first, second = parse_dynamodb_stream_event(dynamodb_stream_event([good, bad]))
    assert type(first.json["NewImage"]["raw"]) is bytes
    with pytest.raises(PoisonMessage, match=r"NewImage is not DynamoDB JSON") as caught:
        _ = second.json
    assert caught.value.code == "malformed_json"


def test_user_identity_is_in_the_document_and_none_when_absent() -> None:
    ttl = dynamodb_stream_record(0, {"pk": "a"}, old_image={"pk": "a"})
    ttl["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    user = dynamodb_stream_record(1, {"pk": "b"}, old_image={"pk": "b"})
    expired, deleted = parse_dynamodb_stream_event(dynamodb_stream_event([ttl, user]))
    assert expired.json["userIdentity"] == {
        "type": "Service",
        "principalId": "dynamodb.amazonaws.com",
    }
    assert deleted.json["userIdentity"] is None


def test_a_consumer_dead_letters_each_malformed_value_with_its_original_record(
    aws: AppState,
) -> None:
    applied: list[Any] = []
    consumer = aws.consumer("images", model=dict, decide=lambda doc, uow: applied.append(doc))
    cases = [value for value, _ in MALFORMED]
    records = [_record(position, value) for position, value in enumerate(cases)]
    response = consumer.handle(dynamodb_stream_event(records), None)
    assert response == {"batchItemFailures": []}
    assert applied == []  # nothing malformed reached the handler
    dead = aws.dead_letters()
    assert len(dead) == len(cases)
    by_id = {d["MessageAttributes"]["dynamodb-stream-event-id"]["StringValue"]: d for d in dead}
    for record in records:
        letter = by_id[record["eventID"]]
        assert letter["MessageAttributes"]["inbox-error-code"]["StringValue"] == "malformed_json"
        assert json.loads(letter["Body"]) == record  # the original record, whole
