"""Kinesis Data Streams and DynamoDB Streams batch semantics: one shard per batch, in order.

A batch comes from one shard, and the shard is an ordering scope with the rules of a Kafka
partition (`report`): once a record needs redelivery, every later record of the shard that has
not committed is skipped, and the response names the first of them by its sequence number
(Lambda retries from there). Poison and duplicates do not block: poison is dead-lettered with
its original bytes and coordinates, and the shard goes on.

Payloads: a Kinesis record's base64 `data`, read as JSON or through `ValueFormats` (a record the
Kinesis Producer Library aggregated is one message per user record, `aggregation`); a DynamoDB
Streams record's document `{"eventName", "Keys", "NewImage", "OldImage"}` with plain values
(numbers as Decimal, sets as sets, binary, which the event carries as base64, as bytes; each
value checked, `store.attribute_values.read_attribute_value`) and its `userIdentity`.
The delivery id, and so the default message key, is the record's `eventID`. Decoding never
raises here: what cannot be read becomes a message the inbox dead-letters. Only a record without
a sequence number (which no response could name) fails the invocation, as `MalformedRecord`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lambda_inbox.errors import ErrorCode, MalformedRecord, UndecodableBody
from lambda_inbox.messages import AttributeValue, InboundMessage
from lambda_inbox.outcomes import MessageResult
from lambda_inbox.sources.fields import KPL_MAGIC, base64_bytes, raw_text, string_attribute

if TYPE_CHECKING:
    from lambda_inbox.sources.values import ValueFormats

#: The parts of a DynamoDB stream record's `dynamodb` object in its payload document.
STREAM_IMAGES = ("Keys", "NewImage", "OldImage")


def parse_kinesis_event(
    event: Mapping[str, Any],
    formats: ValueFormats | None = None,
    seen: dict[str, int] | None = None,
) -> list[InboundMessage]:
    """The event's records as messages, in delivery order. `seen` maps each shard to the highest
    sequence number received before in this execution environment: a record at or below it is
    `redelivered` (a retried batch). It is updated with this batch."""
    return _parse(
        event, seen, lambda record, sequence: _kinesis_messages(record, sequence, formats)
    )


def parse_dynamodb_stream_event(
    event: Mapping[str, Any], seen: dict[str, int] | None = None
) -> list[InboundMessage]:
    """The event's records as messages whose payload is the plain document (module docstring);
    `seen` as for `parse_kinesis_event`."""
    return _parse(event, seen, lambda record, sequence: [_dynamodb_message(record, sequence)])


def _parse(
    event: Mapping[str, Any],
    seen: dict[str, int] | None,
    to_messages: Callable[[object, int], list[InboundMessage]],
) -> list[InboundMessage]:
    records = event.get("Records")
    if not isinstance(records, list):
        raise MalformedRecord("a stream event needs a 'Records' list")
    messages = [m for index, record in enumerate(records) for m in to_messages(record, index)]
    for sequence, message in enumerate(messages):  # an aggregated record holds several
        message.sequence = sequence
    before = dict(seen) if seen else {}
    for message in messages:  # still the adapter's: nothing has read them yet
        scope = str(message.ordering_scope)
        number = _position(message.item_identifier)
        message.redelivered = number is not None and number <= before.get(scope, -1)
        if seen is not None and number is not None:
            seen[scope] = max(number, seen.get(scope, -1))
    return messages


def _position(sequence_number: object) -> int | None:
    text = str(sequence_number)
    return int(text) if text.isdigit() else None


def _kinesis_messages(
    record: object, index: int, formats: ValueFormats | None
) -> list[InboundMessage]:
    """The record's message, or, for a record the KPL aggregated, one message per user record
    (`aggregation`): delivery id `"<eventID>/<index>"`, its own partition key, the parent's
    sequence number to report. An aggregate that cannot be read is one poison message with the
    record's bytes."""
    if not isinstance(record, dict) or not isinstance(record.get("kinesis"), dict):
        raise MalformedRecord(f"Kinesis record {index} has no 'kinesis' object")
    kinesis: dict[str, Any] = record["kinesis"]
    sequence_number = _required_text(kinesis.get("sequenceNumber"), f"Kinesis record {index}")
    event_id = record.get("eventID")
    shard = event_id.split(":", 1)[0] if isinstance(event_id, str) and ":" in event_id else ""
    delivery_id = event_id if isinstance(event_id, str) and event_id else sequence_number
    stream = _text(record.get("eventSourceARN")) or "kinesis"
    coordinates: dict[str, AttributeValue] = {
        "kinesis-sequence-number": string_attribute(sequence_number),
    }
    if shard:
        coordinates["kinesis-shard-id"] = string_attribute(shard)
    raw = kinesis.get("data")
    data = base64_bytes(raw)
    place: dict[str, Any] = {
        "item_identifier": sequence_number,
        "source": stream,
        "sequence": index,
        "ordering_scope": f"{stream}#{shard}" if shard else stream,
    }
    dead_letter = {**coordinates, **_partition_key(_text(kinesis.get("partitionKey")))}
    if data is None:
        text, reason = raw_text(raw), "data is not valid base64"
        return [_poison(delivery_id, text, reason, dead_letter, place)]
    if data.startswith(KPL_MAGIC):
        from lambda_inbox.sources.aggregation import BadAggregate, deaggregate

        try:
            users = deaggregate(data)
        except BadAggregate as error:
            return [_poison(delivery_id, data, str(error), dead_letter, place)]
        return [
            _kinesis_message(
                f"{delivery_id}/{position}",
                user.data,
                {**coordinates, **_partition_key(user.partition_key, position)},
                formats,
                place,
            )
            for position, user in enumerate(users)
        ]
    return [_kinesis_message(delivery_id, data, dead_letter, formats, place)]


def _poison(
    delivery_id: str,
    body: bytes,
    reason: str,
    dead_letter: dict[str, AttributeValue],
    place: dict[str, Any],
) -> InboundMessage:
    """A record that cannot be read, kept as delivered: poison when handled."""
    return InboundMessage(
        delivery_id=delivery_id,
        body=body,
        decode_error=reason,
        dead_letter_attributes=dead_letter,
        **place,
    )


def _partition_key(key: str | None, position: int | None = None) -> dict[str, AttributeValue]:
    """The dead-letter attributes naming a record's partition key (and its place in an
    aggregate)."""
    attributes = {"kinesis-partition-key": string_attribute(key)} if key else {}
    if position is not None:
        attributes["kinesis-aggregate-index"] = string_attribute(str(position))
    return attributes


def _kinesis_message(
    delivery_id: str,
    data: bytes,
    dead_letter: dict[str, AttributeValue],
    formats: ValueFormats | None,
    place: dict[str, Any],
) -> InboundMessage:
    reading: dict[str, Any] = {}
    if formats is not None or data[:1] == b"\x00":
        from lambda_inbox.sources.values import read_value  # JSON-only consumers never load it

        reading = read_value(data, None, formats, dead_letter)
    return InboundMessage(
        delivery_id=delivery_id, body=data, dead_letter_attributes=dead_letter, **place, **reading
    )


def _dynamodb_message(record: object, index: int) -> InboundMessage:
    if not isinstance(record, dict):
        raise MalformedRecord(f"DynamoDB stream record {index} is not an object")
    change = record.get("dynamodb")
    change = change if isinstance(change, dict) else {}
    sequence_number = _required_text(
        change.get("SequenceNumber"), f"DynamoDB stream record {index}"
    )
    delivery_id = _text(record.get("eventID")) or sequence_number
    dead_letter: dict[str, AttributeValue] = {
        "dynamodb-stream-event-id": string_attribute(delivery_id),
        "dynamodb-sequence-number": string_attribute(sequence_number),
    }
    # The record as delivered is what a dead letter keeps: the stream record's JSON.
    body = json.dumps(record, separators=(",", ":"), ensure_ascii=False, default=str)
    return InboundMessage(
        item_identifier=sequence_number,
        delivery_id=delivery_id,
        body=body.encode("utf-8", errors="surrogatepass"),
        source=_text(record.get("eventSourceARN")) or "dynamodb",
        sequence=index,
        ordering_scope=_text(record.get("eventSourceARN")) or "dynamodb",
        dead_letter_attributes=dead_letter,
        decode=functools.partial(stream_document, record),
    )


def stream_record_reading(body: bytes) -> dict[str, Any]:
    """How an SQS message carrying a DynamoDB stream record (a dead letter redriven, a replay)
    is read: as the stream consumer reads the record. A body that is not a record's JSON is
    poison when read."""
    return {"decode": functools.partial(_stream_document_of, body)}


def _stream_document_of(body: bytes) -> dict[str, Any]:
    try:
        record = json.loads(body)
    except (ValueError, RecursionError):
        raise UndecodableBody(
            "the body is not a DynamoDB stream record's JSON", code=ErrorCode.MALFORMED_JSON
        ) from None
    if not isinstance(record, Mapping):
        raise UndecodableBody(
            "the body is not a DynamoDB stream record", code=ErrorCode.MALFORMED_JSON
        )
    return stream_document(record)


def stream_document(record: Mapping[str, Any]) -> dict[str, Any]:
    """The payload of a DynamoDB stream record: its `eventName`, the `Keys`, `NewImage` and
    `OldImage` it carries as plain values (None when absent) and its `userIdentity` (None when
    absent; a TTL deletion names the service `dynamodb.amazonaws.com`). `UndecodableBody`
    (`malformed_json`) for a record whose images are not valid DynamoDB JSON."""
    from lambda_inbox.store.attribute_values import MalformedAttributeValue, read_image

    change = record.get("dynamodb")
    if not isinstance(change, Mapping):
        raise UndecodableBody("the stream record has no 'dynamodb' object")
    document: dict[str, Any] = {"eventName": record.get("eventName")}
    for part in STREAM_IMAGES:
        image = change.get(part)
        try:
            document[part] = None if image is None else read_image(image, part)
        except MalformedAttributeValue as error:
            raise UndecodableBody(
                f"{part} is not DynamoDB JSON ({error})", code=ErrorCode.MALFORMED_JSON
            ) from None
    identity = record.get("userIdentity")
    document["userIdentity"] = dict(identity) if isinstance(identity, Mapping) else None
    return document


def stream_response(results: Iterable[MessageResult]) -> dict[str, list[dict[str, Any]]]:
    """The partial batch response for a stream: per shard, the sequence number of the first
    record to redeliver (Lambda retries the shard from there)."""
    first: dict[str | None, str] = {}
    for result in sorted(results, key=lambda result: result.message.sequence):
        if result.outcome.needs_redelivery:
            first.setdefault(result.message.ordering_scope, result.message.item_identifier)
    return {"batchItemFailures": [{"itemIdentifier": number} for number in first.values()]}


def _required_text(value: object, what: str) -> str:
    """A sequence number: without one, no failure of the record could be reported."""
    if isinstance(value, str) and value:
        return value
    raise MalformedRecord(f"{what} has no sequence number")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
