"""SQS batch semantics: event records in, partial batch response out.

Standard queues are unordered: each record stands alone. FIFO queues follow the AWS rule: after
the first failed record, that record and every later one are reported and not processed
(`fifo_failure_mode="stop"`); `"skip-group"` holds back only later records of the same group.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .config import FifoFailureMode
from .errors import MalformedRecord
from .messages import AttributeValue, InboundMessage
from .outcomes import MessageResult

EVENT_SOURCE = "aws:sqs"
#: Set on dead-lettered messages whose body was not valid SQS text and is carried as base64.
BODY_ENCODING_ATTRIBUTE = "inbox-body-encoding"


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
    """One Lambda SQS record (a plain dict, read defensively) -> InboundMessage."""
    if not isinstance(record, dict):
        raise MalformedRecord(f"SQS record {sequence} is not an object")
    message_id = record.get("messageId")
    if not isinstance(message_id, str) or not message_id:
        raise MalformedRecord(f"SQS record {sequence} has no messageId")
    source = str(record.get("eventSourceARN") or "sqs")
    attributes = record.get("attributes") or {}
    group_id = attributes.get("MessageGroupId")
    scope: str | None = None
    if source.endswith(".fifo"):
        scope = f"{source}#{group_id}" if fifo_mode == "skip-group" else source
    original = _original_attributes(record.get("messageAttributes") or {})
    strings = {
        name: value["StringValue"] for name, value in original.items() if "StringValue" in value
    }
    return InboundMessage(
        item_identifier=message_id,
        delivery_id=message_id,
        body=_body_bytes(record.get("body"), strings.get(BODY_ENCODING_ATTRIBUTE)),
        source=source,
        sequence=sequence,
        attributes=strings,
        ordering_scope=scope,
        deduplication_id=attributes.get("MessageDeduplicationId"),
        dead_letter_attributes=original,
        message_group_id=group_id,
    )


def _body_bytes(body: object, encoding: str | None) -> bytes:
    if not isinstance(body, str):
        return b""
    if encoding == "base64":
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            pass
    return body.encode("utf-8", errors="surrogatepass")


def _original_attributes(raw: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """Lambda's message attribute shape -> SendMessage's, so dead-lettering copies them as-is."""
    converted: dict[str, AttributeValue] = {}
    for name, value in raw.items():
        if not isinstance(value, dict):
            continue
        data_type = value.get("dataType") or value.get("DataType") or "String"
        if value.get("stringValue") is not None:
            converted[name] = {"DataType": data_type, "StringValue": value["stringValue"]}
        elif value.get("binaryValue") is not None:
            try:
                binary = base64.b64decode(value["binaryValue"])
            except (binascii.Error, ValueError):
                continue
            converted[name] = {"DataType": data_type, "BinaryValue": binary}
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
