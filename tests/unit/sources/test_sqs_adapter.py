"""SQS adapter: event records -> InboundMessage, and the partial batch response."""

from __future__ import annotations

import base64
import json

import pytest

from devkit.events import (
    ORDER_FIFO_QUEUE_ARN,
    inbound_message,
    load_event,
    sample_event_names,
    sqs_event,
    sqs_record,
    string_attribute,
)
from lambda_inbox import InboxError, MessageResult, Outcome
from lambda_inbox._sources.sqs import is_sqs_event, parse_sqs_event, sqs_response


@pytest.mark.parametrize("name", sample_event_names("sqs-"))
def test_every_sample_sqs_event_parses(name: str) -> None:
    event = load_event(name)
    assert is_sqs_event(event)
    messages = parse_sqs_event(event)
    assert len(messages) == len(event["Records"])
    for sequence, (parsed, raw) in enumerate(zip(messages, event["Records"], strict=True)):
        assert parsed.sequence == sequence
        assert parsed.item_identifier == parsed.delivery_id == raw["messageId"]
        assert parsed.body == raw["body"].encode("utf-8")
        assert parsed.source == raw["eventSourceARN"]


def test_standard_queue_records_have_no_ordering_scope() -> None:
    for parsed in parse_sqs_event(load_event("sqs-order-batch-duplicates.json")):
        assert parsed.ordering_scope is None
        assert parsed.deduplication_id is None
        assert parsed.message_group_id is None


def test_fifo_scope_is_the_queue_in_stop_mode() -> None:
    event = load_event("sqs-order-fifo.json")
    messages = parse_sqs_event(event, fifo_failure_mode="stop")
    arn = event["Records"][0]["eventSourceARN"]
    assert {parsed.ordering_scope for parsed in messages} == {arn}
    assert [parsed.message_group_id for parsed in messages] == [
        raw["attributes"]["MessageGroupId"] for raw in event["Records"]
    ]
    assert [parsed.deduplication_id for parsed in messages] == [
        raw["attributes"]["MessageDeduplicationId"] for raw in event["Records"]
    ]


def test_fifo_scope_is_queue_and_group_in_skip_group_mode() -> None:
    event = load_event("sqs-order-fifo.json")
    messages = parse_sqs_event(event, fifo_failure_mode="skip-group")
    arn = event["Records"][0]["eventSourceARN"]
    assert [parsed.ordering_scope for parsed in messages] == [
        f"{arn}#{raw['attributes']['MessageGroupId']}" for raw in event["Records"]
    ]
    assert len({parsed.ordering_scope for parsed in messages}) == 2


def test_message_attributes_are_converted_to_send_message_shape() -> None:
    event = load_event("sqs-order-poison.json")
    messages = parse_sqs_event(event)
    assert messages[1].dead_letter_attributes == {
        "trace-id": {"DataType": "String", "StringValue": "trace-7f3a9c2e-0002"},
        "content-type": {"DataType": "String", "StringValue": "application/json"},
    }
    signature = base64.b64decode(
        event["Records"][2]["messageAttributes"]["signature"]["binaryValue"]
    )
    assert messages[2].dead_letter_attributes["signature"] == {
        "DataType": "Binary",
        "BinaryValue": signature,
    }
    # Only string attributes are visible to identity (e.g. idempotency-key).
    assert messages[2].attributes == {"trace-id": "trace-7f3a9c2e-0003"}


def test_custom_data_types_and_broken_attributes() -> None:
    record = sqs_record(
        "{}",
        message_attributes={
            "n": {"stringValue": "42", "dataType": "Number.int"},
            "bin": {"binaryValue": "not base64!!", "dataType": "Binary"},
            "junk": "not a dict",
            "empty": {"dataType": "String"},
        },
    )
    (parsed,) = parse_sqs_event(sqs_event(record))
    assert parsed.dead_letter_attributes == {"n": {"DataType": "Number.int", "StringValue": "42"}}


def test_base64_body_is_decoded_when_marked() -> None:
    raw = b"\xff\xfe binary \x00"
    record = sqs_record(
        base64.b64encode(raw).decode("ascii"),
        message_attributes={"inbox-body-encoding": string_attribute("base64")},
    )
    (parsed,) = parse_sqs_event(sqs_event(record))
    assert parsed.body == raw


def test_unmarked_or_invalid_base64_body_is_kept_as_text() -> None:
    plain = sqs_record("aGVsbG8=")
    invalid = sqs_record(
        "not base64 at all!",
        message_attributes={"inbox-body-encoding": string_attribute("base64")},
    )
    parsed = parse_sqs_event(sqs_event(plain, invalid))
    assert [m.body for m in parsed] == [b"aGVsbG8=", b"not base64 at all!"]


def test_missing_body_is_empty() -> None:
    record = sqs_record("x")
    del record["body"]
    (parsed,) = parse_sqs_event(sqs_event(record))
    assert parsed.body == b""


@pytest.mark.parametrize("message_id", [None, "", 17])
def test_record_without_message_id_is_malformed(message_id: object) -> None:
    record = sqs_record("{}")
    if message_id is None:
        del record["messageId"]
    else:
        record["messageId"] = message_id
    with pytest.raises(InboxError, match="record 1 has no messageId"):
        parse_sqs_event(sqs_event(sqs_record("{}"), record))


def test_event_without_records_list_is_malformed() -> None:
    with pytest.raises(InboxError, match="'Records' list"):
        parse_sqs_event({"Records": {"not": "a list"}})


def test_fifo_record_without_source_arn_falls_back_to_sqs() -> None:
    record = sqs_record("{}", arn=ORDER_FIFO_QUEUE_ARN, group="g")
    del record["eventSourceARN"]
    (parsed,) = parse_sqs_event(sqs_event(record))
    assert parsed.source == "sqs"
    assert parsed.ordering_scope is None


def test_sqs_response_shape_is_exact() -> None:
    outcomes = list(Outcome)
    results = [
        MessageResult(inbound_message(delivery_id=f"mid-{outcome.value}", sequence=index), outcome)
        for index, outcome in enumerate(outcomes)
    ]
    response = sqs_response(results)
    assert response == {
        "batchItemFailures": [{"itemIdentifier": "mid-failed"}, {"itemIdentifier": "mid-skipped"}]
    }
    assert json.loads(json.dumps(response)) == response
    assert sqs_response([]) == {"batchItemFailures": []}
