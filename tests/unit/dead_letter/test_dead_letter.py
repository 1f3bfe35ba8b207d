"""Dead-lettering to SQS (moto): body and attributes kept, reasons added, FIFO fields set."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import TYPE_CHECKING

from devkit.app_state import AppState
from devkit.events import (
    ORDER_FIFO_QUEUE_ARN,
    ORDER_QUEUE_ARN,
    SENDER_ID,
    binary_attribute,
    inbound_message,
    load_event,
    received_attributes,
    sqs_event,
    sqs_record,
    sqs_record_from,
    string_attribute,
)
from lambda_inbox._dead_letter.queue import DeadLetterQueue
from lambda_inbox.wire import parse_sqs_event

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef

#: The attribute a dead letter folds its original attributes into: a wire contract, so spelled here.
FOLDED_ATTRIBUTE = "inbox-original-attributes"


def _only(aws: AppState) -> MessageTypeDef:
    (received,) = aws.dead_letters()
    return received


def test_body_and_original_attributes_are_kept_and_reasons_added(aws: AppState) -> None:
    record = load_event("sqs-order-poison.json")["Records"][2]  # String + Binary attributes
    (parsed,) = parse_sqs_event(sqs_event(record))
    DeadLetterQueue(aws.sqs, aws.dlq_url).send(
        parsed, message_key="evt-order-0203", code="invalid_payload", error="lines missing"
    )
    received = _only(aws)
    assert received["Body"] == record["body"]
    assert received["MessageAttributes"] == {
        **received_attributes(record["messageAttributes"]),
        "inbox-error-code": {"DataType": "String", "StringValue": "invalid_payload"},
        "inbox-error": {"DataType": "String", "StringValue": "lines missing"},
        "inbox-message-key": {"DataType": "String", "StringValue": "evt-order-0203"},
        "inbox-sender": {"DataType": "String", "StringValue": SENDER_ID},
    }


def test_long_errors_are_truncated_and_empty_errors_use_the_code(aws: AppState) -> None:
    queue = DeadLetterQueue(aws.sqs, aws.dlq_url)
    queue.send(inbound_message("{}", delivery_id="a"), message_key="a", code="c1", error="e" * 5000)
    queue.send(inbound_message("{}", delivery_id="b"), message_key="b", code="c2", error="")
    errors = {
        m["MessageAttributes"]["inbox-message-key"]["StringValue"]: m["MessageAttributes"][
            "inbox-error"
        ]["StringValue"]
        for m in aws.dead_letters()
    }
    assert errors == {"a": "e" * 1000, "b": "c2"}


def test_more_than_ten_attributes_are_folded_not_lost(aws: AppState) -> None:
    originals = {f"attr-{index:02d}": string_attribute(f"value-{index}") for index in range(9)}
    originals["bin"] = binary_attribute(b"\x00\x01\xff")
    record = sqs_record('{"x": 1}', message_attributes=originals)
    (parsed,) = parse_sqs_event(sqs_event(record))
    DeadLetterQueue(aws.sqs, aws.dlq_url).send(parsed, message_key="k", code="c", error="e")
    attributes = _only(aws)["MessageAttributes"]
    assert len(attributes) == 10
    assert {"inbox-error-code", "inbox-error", "inbox-message-key", FOLDED_ATTRIBUTE} <= set(
        attributes
    )
    kept = {name: value for name, value in attributes.items() if name.startswith("attr-")}
    folded = json.loads(attributes[FOLDED_ATTRIBUTE]["StringValue"])
    recovered = {name: value["StringValue"] for name, value in kept.items()}
    recovered.update({name: value for name, value in folded.items() if name != "bin"})
    assert recovered == {f"attr-{index:02d}": f"value-{index}" for index in range(9)}
    assert base64.b64decode(folded["bin"]) == b"\x00\x01\xff"
    assert not set(kept) & set(folded)


def test_exactly_six_originals_fit_without_folding(aws: AppState) -> None:
    """Four of SQS's ten attributes are the dead letter's own (code, reason, key, sender)."""
    originals = {f"a{index}": string_attribute(str(index)) for index in range(6)}
    (parsed,) = parse_sqs_event(sqs_event(sqs_record("{}", message_attributes=originals)))
    DeadLetterQueue(aws.sqs, aws.dlq_url).send(parsed, message_key="k", code="c", error="e")
    attributes = _only(aws)["MessageAttributes"]
    assert FOLDED_ATTRIBUTE not in attributes
    assert len(attributes) == 10


def test_seven_originals_and_a_body_to_compress_stay_within_ten_attributes(
    aws: AppState,
) -> None:
    """The compressed body's encoding attribute needs a slot: one more original is folded
    (found by the Kafka fuzz test: SQS refused the eleventh attribute)."""
    originals = {f"a{index}": string_attribute(str(index)) for index in range(7)}
    body = "x" * 300_000  # over SQS's 256 KiB as it is, small once compressed
    (parsed,) = parse_sqs_event(sqs_event(sqs_record(body, message_attributes=originals)))
    DeadLetterQueue(aws.sqs, aws.dlq_url).send(parsed, message_key="k", code="c", error="e")
    received = _only(aws)
    attributes = received["MessageAttributes"]
    assert len(attributes) == 10
    assert attributes["inbox-body-encoding"]["StringValue"] == "zlib+base64"
    folded = json.loads(attributes[FOLDED_ATTRIBUTE]["StringValue"])
    kept = {name for name in attributes if name.startswith("a")}
    assert kept | set(folded) == set(originals)
    (replayed,) = parse_sqs_event(sqs_event(sqs_record_from(received, arn=ORDER_QUEUE_ARN)))
    assert replayed.body == body.encode()


def test_binary_body_is_sent_base64_and_replays_to_the_same_bytes(aws: AppState) -> None:
    raw = b"\xff\xfe\x00not utf-8"
    DeadLetterQueue(aws.sqs, aws.dlq_url).send(
        inbound_message(raw), message_key="k", code="undecodable_body", error="e"
    )
    received = _only(aws)
    assert received["Body"] == base64.b64encode(raw).decode("ascii")
    assert received["MessageAttributes"]["inbox-body-encoding"] == {
        "DataType": "String",
        "StringValue": "base64",
    }
    # The SQS adapter turns the redriven message back into the original bytes.
    replay = sqs_record_from(received, arn=ORDER_QUEUE_ARN)
    (parsed,) = parse_sqs_event(sqs_event(replay))
    assert parsed.body == raw


def test_text_sqs_cannot_carry_and_empty_bodies_are_base64(aws: AppState) -> None:
    queue = DeadLetterQueue(aws.sqs, aws.dlq_url)
    queue.send(
        inbound_message("bell \x07 char", delivery_id="ctl"), message_key="ctl", code="c", error="e"
    )
    queue.send(inbound_message(b"", delivery_id="empty"), message_key="empty", code="c", error="e")
    bodies = {
        m["MessageAttributes"]["inbox-message-key"]["StringValue"]: (
            m["Body"],
            m["MessageAttributes"]["inbox-body-encoding"]["StringValue"],
        )
        for m in aws.dead_letters()
        if "inbox-body-encoding" in m["MessageAttributes"]
    }
    assert bodies["ctl"] == (base64.b64encode(b"bell \x07 char").decode(), "base64")
    assert set(bodies) == {"ctl", "empty"}


def test_a_stale_body_encoding_attribute_is_not_copied_from_the_original(aws: AppState) -> None:
    record = sqs_record(
        base64.b64encode(b'{"a": 1}').decode(),
        message_attributes={"inbox-body-encoding": string_attribute("base64")},
    )
    (parsed,) = parse_sqs_event(sqs_event(record))  # decoded to valid text
    DeadLetterQueue(aws.sqs, aws.dlq_url).send(parsed, message_key="k", code="c", error="e")
    received = _only(aws)
    assert received["Body"] == '{"a": 1}'
    assert "inbox-body-encoding" not in received["MessageAttributes"]


def test_fifo_dead_letter_queue_gets_group_and_deduplication_ids(aws: AppState) -> None:
    record = sqs_record('{"a": 1}', arn=ORDER_FIFO_QUEUE_ARN, group="cust-7", dedup="evt-1")
    (parsed,) = parse_sqs_event(sqs_event(record))
    assert aws.fifo_dlq_url is not None
    queue = DeadLetterQueue(aws.sqs, aws.fifo_dlq_url)
    queue.send(parsed, message_key="evt-1", code="c", error="e")
    queue.send(parsed, message_key="evt-1", code="c", error="e")  # deduplicated by SQS
    queue.send(
        inbound_message('{"b": 2}', delivery_id="std-1"), message_key="key-9", code="c", error="e"
    )
    received = aws.dead_letters(fifo=True)
    assert len(received) == 2
    first, second = received
    assert first["Attributes"]["MessageGroupId"] == "cust-7"
    assert (
        first["Attributes"]["MessageDeduplicationId"]
        == hashlib.sha256(record["messageId"].encode()).hexdigest()
    )
    assert first["Body"] == '{"a": 1}'
    # Without a group, the message key is the group.
    assert second["Attributes"]["MessageGroupId"] == "key-9"


def test_send_returns_the_new_message_id(aws: AppState) -> None:
    new_id = DeadLetterQueue(aws.sqs, aws.dlq_url).send(
        inbound_message("{}"), message_key="k", code="c", error="e"
    )
    assert _only(aws)["MessageId"] == new_id
