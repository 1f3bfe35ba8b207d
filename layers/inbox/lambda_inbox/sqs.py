"""SQS batch semantics: event records in, partial batch response out.

Standard queues are unordered: each record stands alone. FIFO queues follow the AWS rule: after
the first failed record, that record and every later one are reported and not processed
(`fifo_failure_mode="stop"`); `"skip-group"` holds back only later records of the same group.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .config import FifoFailureMode
from .errors import MalformedRecord
from .messages import AttributeValue, InboundMessage
from .outcomes import MessageResult

EVENT_SOURCE = "aws:sqs"
#: Set on dead-lettered messages whose body is not the original text: how to get the original
#: bytes back (`base64`, `empty`, `zlib+base64`, `truncated+base64`; see `dead_letter`).
BODY_ENCODING_ATTRIBUTE = "inbox-body-encoding"
#: SHA-256 (hex) and length of the original body, when the dead letter holds only its start.
BODY_DIGEST_ATTRIBUTE = "inbox-body-sha256"
BODY_BYTES_ATTRIBUTE = "inbox-body-bytes"
#: The body of a dead letter whose original had no bytes (SQS refuses an empty body).
EMPTY_BODY = "(empty)"
#: Data type of a String attribute value sent JSON-encoded because SQS would refuse it as it is.
ESCAPED_STRING = "String.inbox-escaped"


class SqsSource:
    """SQS standard and FIFO queues (`EventSource`)."""

    name = "sqs"

    def __init__(self, fifo_failure_mode: FifoFailureMode = "stop") -> None:
        self._fifo_failure_mode = fifo_failure_mode

    def matches(self, event: Mapping[str, Any]) -> bool:
        return is_sqs_event(event)

    def messages(self, event: Mapping[str, Any]) -> list[InboundMessage]:
        return parse_sqs_event(event, fifo_failure_mode=self._fifo_failure_mode)

    def response(self, results: Sequence[MessageResult]) -> dict[str, list[dict[str, Any]]]:
        return sqs_response(results)


def is_sqs_event(event: Mapping[str, Any]) -> bool:
    """Records from SQS: `eventSource` "aws:sqs", or no `eventSource` but a `messageId` (a
    hand-written test event); records of any other source (SNS, Kinesis...) are not."""
    records = event.get("Records")
    return (
        bool(records)
        and isinstance(records, list)
        and all(isinstance(record, dict) and _from_sqs(record) for record in records)
    )


def _from_sqs(record: Mapping[str, Any]) -> bool:
    source = record.get("eventSource")
    return source == EVENT_SOURCE or (source is None and "messageId" in record)


def parse_sqs_event(
    event: Mapping[str, Any], *, fifo_failure_mode: FifoFailureMode = "stop"
) -> list[InboundMessage]:
    records = event.get("Records")
    if not isinstance(records, list):
        raise MalformedRecord("an SQS event needs a 'Records' list")
    return [_to_message(raw, sequence, fifo_failure_mode) for sequence, raw in enumerate(records)]


def _to_message(record: object, sequence: int, fifo_mode: FifoFailureMode) -> InboundMessage:
    """One Lambda SQS record (a plain dict, read defensively) -> InboundMessage.

    Only `messageId` is required: without it no failure of the record could be reported, so the
    invocation fails (`MalformedRecord`). Anything else of the wrong type is ignored, and a body
    that is missing or not text is an empty body (poison, dead-lettered).
    """
    if not isinstance(record, dict):
        raise MalformedRecord(f"SQS record {sequence} is not an object")
    message_id = record.get("messageId")
    if not isinstance(message_id, str) or not message_id:
        raise MalformedRecord(f"SQS record {sequence} has no messageId")
    arn = record.get("eventSourceARN")
    source = arn if isinstance(arn, str) and arn else "sqs"
    attributes = _mapping(record.get("attributes"))
    group_id = _text(attributes.get("MessageGroupId"))
    scope: str | None = None
    if source.endswith(".fifo"):
        scope = f"{source}#{group_id}" if fifo_mode == "skip-group" else source
    original = _original_attributes(_mapping(record.get("messageAttributes")))
    strings = {
        name: value["StringValue"] for name, value in original.items() if "StringValue" in value
    }
    body, decode_error = _body_bytes(record.get("body"), strings)
    return InboundMessage(
        item_identifier=message_id,
        delivery_id=message_id,
        body=body,
        decode_error=decode_error,
        source=source,
        sequence=sequence,
        attributes=strings,
        ordering_scope=scope,
        deduplication_id=_text(attributes.get("MessageDeduplicationId")),
        dead_letter_attributes=original,
        message_group_id=group_id,
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _body_bytes(body: object, attributes: Mapping[str, str]) -> tuple[bytes, str | None]:
    """The body's bytes, decoded from a dead letter's envelope when it carries one; with the
    reason it cannot be used, if any."""
    if not isinstance(body, str):
        return b"", None
    encoding = attributes.get(BODY_ENCODING_ATTRIBUTE)
    try:
        if encoding == "empty" and body == EMPTY_BODY:
            return b"", None
        if encoding == "base64":
            return base64.b64decode(body, validate=True), None
        if encoding == "zlib+base64":
            return zlib.decompress(base64.b64decode(body, validate=True)), None
        if encoding == "truncated+base64":
            size = attributes.get(BODY_BYTES_ATTRIBUTE, "?")
            return (
                base64.b64decode(body, validate=True),
                f"the dead letter holds only the start of the original body ({size} bytes)",
            )
    except (binascii.Error, ValueError, zlib.error):
        pass  # not an envelope after all: the body as delivered
    return body.encode("utf-8", errors="surrogatepass"), None


def _original_attributes(raw: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """Lambda's message attribute shape -> SendMessage's, so dead-lettering copies them as-is.
    A value escaped by dead-lettering (`String.inbox-escaped`) is decoded back to the original."""
    converted: dict[str, AttributeValue] = {}
    for name, value in raw.items():
        if not isinstance(value, dict):
            continue
        data_type = value.get("dataType") or value.get("DataType") or "String"
        if not isinstance(data_type, str):
            data_type = "String"
        string = value.get("stringValue")
        if isinstance(string, str):
            if data_type == ESCAPED_STRING:
                try:
                    decoded = json.loads(string)
                except (ValueError, RecursionError):
                    decoded = None
                if isinstance(decoded, str):
                    string, data_type = decoded, "String"
            converted[str(name)] = {"DataType": data_type, "StringValue": string}
        elif isinstance(value.get("binaryValue"), str):
            try:
                binary = base64.b64decode(value["binaryValue"])
            except (binascii.Error, ValueError):
                continue
            converted[str(name)] = {"DataType": data_type, "BinaryValue": binary}
    return converted


def sqs_response(results: Iterable[MessageResult]) -> dict[str, list[dict[str, Any]]]:
    """`{"batchItemFailures": [{"itemIdentifier": messageId}]}` for records to redeliver."""
    return {
        "batchItemFailures": [
            {"itemIdentifier": result.message.item_identifier}
            for result in results
            if result.outcome.needs_redelivery
        ]
    }
