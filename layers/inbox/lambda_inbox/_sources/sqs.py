"""SQS batch semantics: event records in, partial batch response out.

Standard queues are unordered: each record stands alone. FIFO queues follow the AWS rule: after
the first failed record, that record and every later one are reported and not processed
(`fifo_failure_mode="stop"`); `"skip-group"` holds back only later records of the same group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lambda_inbox._config import FifoFailureMode
from lambda_inbox._errors import MalformedRecord
from lambda_inbox._messages import InboundMessage
from lambda_inbox._outcomes import MessageResult
from lambda_inbox._sources.redriven import body_bytes, original_attributes
from lambda_inbox._sources.senders import sender_of

if TYPE_CHECKING:
    from lambda_inbox._sources import EnvelopeName
    from lambda_inbox._sources.values import ValueFormats

EVENT_SOURCE = "aws:sqs"
#: Set on messages that carry a Kafka record (dead-lettered or replayed from a cluster): their
#: body is read as that record's value would be (`values`).
KAFKA_TOPIC_ATTRIBUTE = "kafka-topic"
#: Set on messages that carry a DynamoDB stream record (dead-lettered or replayed from a stream):
#: their body is the record's JSON, read as the stream consumer reads it (streams).
STREAM_RECORD_ATTRIBUTE = "dynamodb-stream-event-id"
#: Message attributes of a message sent again by an operator: a dead letter of the inbox
#: (`inbox-error-code`, `inbox-message-key`) or a Kafka or stream record redriven or replayed.
#: Such a message may have committed before (duplicate_read).
REPLAYED_ATTRIBUTES = (
    "inbox-error-code",
    "inbox-message-key",
    KAFKA_TOPIC_ATTRIBUTE,
    STREAM_RECORD_ATTRIBUTE,
)


class SqsSource:
    """SQS standard and FIFO queues (`EventSource`)."""

    name = "sqs"

    def __init__(
        self,
        fifo_failure_mode: FifoFailureMode = "stop",
        value_formats: ValueFormats | None = None,
        envelope: EnvelopeName | None = None,
        trusted_redrivers: frozenset[str] = frozenset(),
    ) -> None:
        self._fifo_failure_mode = fifo_failure_mode
        self._formats = value_formats
        self._envelope: EnvelopeName | None = envelope
        self._redrivers = trusted_redrivers

    def matches(self, event: Mapping[str, Any]) -> bool:
        return is_sqs_event(event)

    def messages(self, event: Mapping[str, Any]) -> list[InboundMessage]:
        return parse_sqs_event(
            event,
            fifo_failure_mode=self._fifo_failure_mode,
            value_formats=self._formats,
            envelope=self._envelope,
            trusted_redrivers=self._redrivers,
        )

    def response(self, results: Sequence[MessageResult]) -> dict[str, list[dict[str, Any]]]:
        return sqs_response(results)


def is_sqs_event(event: Mapping[str, Any]) -> bool:
    """Records from SQS: `eventSource` "aws:sqs", or no `eventSource` but a `messageId` (a
    hand-written test event); records of any other source (SNS, Kinesis...) are not."""
    records = event.get("Records")
    if not records or not isinstance(records, list):
        return False
    for record in records:
        if not isinstance(record, dict):
            return False
        source = record.get("eventSource")
        if source != EVENT_SOURCE and (source is not None or "messageId" not in record):
            return False
    return True


def parse_sqs_event(
    event: Mapping[str, Any],
    *,
    fifo_failure_mode: FifoFailureMode = "stop",
    value_formats: ValueFormats | None = None,
    envelope: EnvelopeName | None = None,
    trusted_redrivers: frozenset[str] = frozenset(),
) -> list[InboundMessage]:
    """The event's records as messages; with an `envelope`, the messages each body carries
    (`envelopes`: none for an S3 test event, one per record of an S3 notification), numbered
    in delivery order. `trusted_redrivers`: the principals whose copies of a dead letter are
    believed about its original sender (`senders`)."""
    records = event.get("Records")
    if not isinstance(records, list):
        raise MalformedRecord("an SQS event needs a 'Records' list")
    messages = [
        _to_message(raw, sequence, fifo_failure_mode, value_formats, trusted_redrivers)
        for sequence, raw in enumerate(records)
    ]
    if envelope is None:
        return messages
    from lambda_inbox._sources.envelopes import unwrap  # consumers with an envelope only

    carried = [inner for message in messages for inner in unwrap(envelope, message)]
    for sequence, message in enumerate(carried):
        message.sequence = sequence
    return carried


def _to_message(
    record: object,
    sequence: int,
    fifo_mode: FifoFailureMode,
    formats: ValueFormats | None,
    redrivers: frozenset[str],
) -> InboundMessage:
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
    attributes = record.get("attributes")
    if not isinstance(attributes, dict):
        attributes = {}
    group_id = _text(attributes.get("MessageGroupId"))
    scope: str | None = None
    if source.endswith(".fifo"):
        scope = f"{source}#{group_id}" if fifo_mode == "skip-group" else source
    raw_attributes = record.get("messageAttributes")
    original = (
        original_attributes(raw_attributes)
        if raw_attributes and isinstance(raw_attributes, dict)
        else {}
    )
    strings = (
        {name: value["StringValue"] for name, value in original.items() if "StringValue" in value}
        if original
        else {}
    )
    body, decode_error = body_bytes(record.get("body"), strings)
    sender, sender_claim = sender_of(attributes.get("SenderId"), strings, redrivers)
    reading: dict[str, Any] = {}
    if STREAM_RECORD_ATTRIBUTE in strings and decode_error is None:  # a stream record, again
        from lambda_inbox._sources.streams import stream_record_reading

        reading = stream_record_reading(body)
    elif KAFKA_TOPIC_ATTRIBUTE in strings and decode_error is None:  # a Kafka value, replayed
        from lambda_inbox._sources.values import FORMAT_ATTRIBUTE, SCHEMA_ID_ATTRIBUTE, read_value

        declared = strings.get(FORMAT_ATTRIBUTE)
        metadata = (
            {"dataFormat": declared, "schemaId": strings.get(SCHEMA_ID_ATTRIBUTE)}
            if declared
            else None
        )
        reading = read_value(body, metadata, formats, {})
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
        redelivered=_redelivered(attributes, strings),
        sender=sender,
        sender_claim=sender_claim,
        **reading,
    )


def _redelivered(attributes: Mapping[str, Any], strings: Mapping[str, str]) -> bool:
    """Received before (`ApproximateReceiveCount` above 1), moved by a redrive policy
    (`DeadLetterQueueSourceArn`), or sent again by an operator (REPLAYED_ATTRIBUTES)."""
    count = attributes.get("ApproximateReceiveCount")
    return (
        (isinstance(count, str) and count != "1" and count.isdigit() and int(count) > 1)
        or "DeadLetterQueueSourceArn" in attributes
        or (bool(strings) and not strings.keys().isdisjoint(REPLAYED_ATTRIBUTES))
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def sqs_response(results: Iterable[MessageResult]) -> dict[str, list[dict[str, Any]]]:
    """`{"batchItemFailures": [{"itemIdentifier": messageId}]}` for records to redeliver, each
    SQS message once (an S3 notification's records share theirs)."""
    failed = {
        result.message.item_identifier: None
        for result in results
        if result.outcome.needs_redelivery
    }
    return {"batchItemFailures": [{"itemIdentifier": identifier} for identifier in failed]}
