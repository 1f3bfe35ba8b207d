"""Kafka (MSK / self-managed) event parsing and the partial batch response shape.

Pure functions: no AWS at all. The consumer-level behaviour (per-partition failures, DLQ, replay)
is in test_kafka_consumer.py.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from devkit.events import load_event
from lambda_inbox import InboxError, MessageResult, Outcome, PoisonMessage
from lambda_inbox._sources import is_kafka_event
from lambda_inbox._sources.identity import KeyStrategy
from lambda_inbox._sources.kafka import kafka_response, parse_kafka_event


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def raw_record(offset: int, **fields: Any) -> dict[str, Any]:
    return {"topic": "payments", "partition": 0, "offset": offset, **fields}


def event_of(records: dict[str, list[dict[str, Any]]], source: str = "aws:kafka") -> dict[str, Any]:
    return {"eventSource": source, "records": records}


# ---- ordering and identifiers ---------------------------------------------------------------


def test_records_are_in_offset_order_per_partition_whatever_the_delivered_order() -> None:
    event = load_event("msk-payment-multi-partition.json")
    for records in event["records"].values():
        records.reverse()  # deliver each partition backwards
    messages = parse_kafka_event(event)

    by_partition: dict[str, list[int]] = {}
    for message in messages:
        assert message.ordering_scope == message.item_identifier["topic-partition"]
        by_partition.setdefault(str(message.ordering_scope), []).append(
            message.item_identifier["offset"]
        )
    assert by_partition == {
        "payments-0": [10, 11, 12],
        "payments-1": [40, 41, 42, 43],
        "payments-2": [7, 8, 9],
    }
    # sequence numbers follow that order and are unique
    assert [m.sequence for m in messages] == list(range(len(messages)))


def test_item_identifier_and_delivery_id_are_kafka_coordinates() -> None:
    messages = parse_kafka_event(load_event("msk-payment-multi-partition.json"))
    third = next(m for m in messages if m.item_identifier["offset"] == 12)
    assert third.item_identifier == {"topic-partition": "payments-0", "offset": 12}
    assert isinstance(third.item_identifier["offset"], int)
    assert third.delivery_id == "payments-0-12"
    assert third.source == "payments-0-12"
    # Without an extractor, the delivery id is the key (topic-partition-offset).
    assert KeyStrategy().message_key(third) == "payments-0-12"


def test_headers_are_decoded_from_byte_lists_and_idempotency_key_is_the_key() -> None:
    messages = parse_kafka_event(load_event("msk-payment-multi-partition.json"))
    with_content_type = next(m for m in messages if m.delivery_id == "payments-0-11")
    assert with_content_type.attributes == {"content-type": "application/json"}
    with_key = next(m for m in messages if m.delivery_id == "payments-2-8")
    assert with_key.attributes["idempotency-key"] == "evt-pay-0108"
    assert KeyStrategy().message_key(with_key) == "evt-pay-0108"
    # An explicit extractor wins over the header.
    custom = KeyStrategy.from_body("payment_id")
    assert custom.message_key(with_key) == "pay-0108"
    # Headers are carried onto the dead-letter attributes as JSON.
    assert json.loads(with_key.dead_letter_attributes["kafka-headers"]["StringValue"]) == {
        "idempotency-key": "evt-pay-0108"
    }


def test_malformed_header_entries_are_ignored_not_fatal() -> None:
    event = event_of(
        {
            "payments-0": [
                raw_record(
                    1,
                    value=b64(b"{}"),
                    headers=[
                        "not-a-dict",
                        {"good": [104, 105]},
                        {"bad-bytes": [300]},
                        {"not-list": "x"},
                    ],
                )
            ]
        }
    )
    (message,) = parse_kafka_event(event)
    assert message.attributes["good"] == "hi"
    assert "bad-bytes" not in message.attributes
    assert message.attributes["not-list"] == ""


def test_dead_letter_attributes_carry_topic_partition_offset_and_key() -> None:
    event = event_of(
        {
            "payments-3": [
                raw_record(77, partition=3, key=b64(b"ord-1"), value=b64(b"{}")),
                raw_record(78, partition=3, key=b64(b"\xff\x00"), value=b64(b"{}")),
                raw_record(79, partition=3, value=b64(b"{}")),
            ]
        }
    )
    text_key, binary_key, no_key = parse_kafka_event(event)
    assert text_key.dead_letter_attributes == {
        "kafka-topic": {"DataType": "String", "StringValue": "payments"},
        "kafka-partition": {"DataType": "String", "StringValue": "3"},
        "kafka-offset": {"DataType": "String", "StringValue": "77"},
        "kafka-key": {"DataType": "String", "StringValue": "ord-1"},
    }
    assert binary_key.dead_letter_attributes["kafka-key"] == {
        "DataType": "Binary",
        "BinaryValue": b"\xff\x00",
    }
    assert "kafka-key" not in no_key.dead_letter_attributes


# ---- lazy, robust decoding -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        pytest.param({"value": "%%% not base64 %%%"}, "undecodable_body", id="not-base64"),
        pytest.param({"value": b64(b"\xff\xfe")}, "undecodable_body", id="not-utf8"),
        pytest.param({"value": b64(b"payment captured")}, "malformed_json", id="not-json"),
        pytest.param({}, "undecodable_body", id="missing-value"),
        pytest.param({"value": None}, "undecodable_body", id="null-value-tombstone"),
        pytest.param({"value": 12345}, "undecodable_body", id="value-not-a-string"),
    ],
)
def test_bad_values_parse_and_only_fail_when_read(fields: dict[str, Any], code: str) -> None:
    (message,) = parse_kafka_event(event_of({"payments-0": [raw_record(5, **fields)]}))
    assert message.item_identifier == {"topic-partition": "payments-0", "offset": 5}
    with pytest.raises(PoisonMessage) as info:
        _ = message.json
    assert info.value.code == code
    # Identity falls back to the coordinates; the extractor itself reports the poison.
    assert KeyStrategy().message_key(message) == "payments-0-5"
    with pytest.raises(PoisonMessage):
        KeyStrategy.from_body("event_id").message_key(message)


def test_value_not_base64_keeps_the_raw_text_for_the_dead_letter_queue() -> None:
    (message,) = parse_kafka_event(event_of({"payments-0": [raw_record(5, value="{oops")]}))
    assert message.decode_error == "value is not valid base64"
    assert message.body == b"{oops"


def test_topic_and_partition_come_from_the_mapping_key_when_fields_are_absent() -> None:
    event = event_of({"my-topic-7": [{"offset": 3, "value": b64(b"{}")}]})
    (message,) = parse_kafka_event(event)
    assert message.delivery_id == "my-topic-7-3"
    assert message.dead_letter_attributes["kafka-topic"]["StringValue"] == "my-topic"
    assert message.dead_letter_attributes["kafka-partition"]["StringValue"] == "7"


# ---- event sources and malformed envelopes ------------------------------------------------------


@pytest.mark.parametrize("source", ["aws:kafka", "SelfManagedKafka"])
def test_both_kafka_event_sources_are_recognised(source: str) -> None:
    event = load_event("msk-payment-single.json")
    event["eventSource"] = source
    assert is_kafka_event(event)
    (message,) = parse_kafka_event(event)
    assert message.json["event_id"] == "evt-pay-0001"


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(None, id="missing"),
        pytest.param([], id="a-list"),
        pytest.param({"payments-0": {"offset": 1}}, id="partition-not-a-list"),
        pytest.param({"payments-0": ["x"]}, id="record-not-a-dict"),
        pytest.param({"payments-0": [{"value": "e30="}]}, id="no-offset"),
        pytest.param({"payments-0": [{"offset": "12", "value": "e30="}]}, id="offset-not-int"),
    ],
)
def test_malformed_records_raise_malformed_kafka_event(records: object) -> None:
    event: dict[str, Any] = {"eventSource": "aws:kafka"}
    if records is not None:
        event["records"] = records
    with pytest.raises(InboxError):
        parse_kafka_event(event)


def test_an_empty_records_mapping_is_an_empty_batch() -> None:
    assert parse_kafka_event({"eventSource": "aws:kafka", "records": {}}) == []


# ---- response shape ------------------------------------------------------------------------------


def test_response_shape_lists_only_records_to_redeliver_in_order() -> None:
    messages = parse_kafka_event(load_event("msk-payment-multi-partition.json"))
    outcomes = {
        "payments-0-12": Outcome.FAILED,
        "payments-1-42": Outcome.FAILED,
        "payments-1-43": Outcome.SKIPPED,
        "payments-2-7": Outcome.DEAD_LETTERED,
        "payments-2-8": Outcome.DUPLICATE,
    }
    results = [
        MessageResult(message, outcomes.get(message.delivery_id, Outcome.COMMITTED))
        for message in reversed(messages)
    ]
    response = kafka_response(results)
    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": {"topic-partition": "payments-0", "offset": 12}},
            {"itemIdentifier": {"topic-partition": "payments-1", "offset": 42}},
            {"itemIdentifier": {"topic-partition": "payments-1", "offset": 43}},
        ]
    }
    json.dumps(response)  # what Lambda receives must be plain JSON


def test_response_for_a_clean_batch_is_empty() -> None:
    messages = parse_kafka_event(load_event("msk-payment-single.json"))
    assert kafka_response([MessageResult(messages[0], Outcome.COMMITTED)]) == {
        "batchItemFailures": []
    }
