"""Kinesis Data Streams and DynamoDB Streams batch semantics: one shard per batch, in order.

A batch comes from one shard, and the shard is an ordering scope with the rules of a Kafka
partition (`report`): once a record needs redelivery, every later record of the shard that has
not committed is skipped, and the response names the first of them by its sequence number
(Lambda retries from there). Poison and duplicates do not block: poison is dead-lettered with
its original bytes and coordinates, and the shard goes on.

Payloads: a Kinesis record's base64 `data`, read as JSON or through `ValueFormats` (`kinesis`:
a record the Kinesis Producer Library aggregated is one message per user record, made as they
are read, a chunk at a time); a DynamoDB Streams record's document `{"eventName", "Keys", "NewImage", "OldImage"}` with plain values
(numbers as Decimal, sets as sets, binary, which the event carries as base64, as bytes; each
value checked, `store.attribute_values.read_attribute_value`) and its `userIdentity`.
The delivery id, and so the default message key, is the record's `eventID`. Decoding never
raises here: what cannot be read becomes a message the inbox dead-letters. Only a record without
a sequence number (which no response could name) fails the invocation, as `MalformedRecord`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from lambda_inbox._errors import ErrorCode, MalformedRecord, UndecodableBody
from lambda_inbox._messages import AttributeValue, InboundMessage
from lambda_inbox._outcomes import MessageResult
from lambda_inbox._sources.fields import string_attribute

#: The parts of a DynamoDB stream record's `dynamodb` object in its payload document.
STREAM_IMAGES = ("Keys", "NewImage", "OldImage")


def parse_dynamodb_stream_event(
    event: Mapping[str, Any], seen: dict[str, int] | None = None
) -> list[InboundMessage]:
    """The event's records as messages whose payload is the plain document (module docstring).
    `seen` maps each stream to the highest sequence number received before in this execution
    environment: a record at or below it is `redelivered` (a retried batch). It is updated with
    this batch."""
    records = stream_records(event)
    messages = (_dynamodb_message(record, index) for index, record in enumerate(records))
    return list(numbered(messages, seen))


def stream_records(event: Mapping[str, Any]) -> list[Any]:
    """The event's `Records`; `MalformedRecord` when it has none."""
    records = event.get("Records")
    if not isinstance(records, list):
        raise MalformedRecord("a stream event needs a 'Records' list")
    return records


def numbered(
    messages: Iterable[InboundMessage], seen: dict[str, int] | None
) -> Iterator[InboundMessage]:
    """`messages` numbered in delivery order (an aggregated record holds several) and marked
    `redelivered` when `seen` already holds their sequence number, `seen` updated as they go."""
    before = dict(seen) if seen else {}
    for sequence, message in enumerate(messages):  # still the adapter's: nothing read them yet
        message.sequence = sequence
        scope = str(message.ordering_scope)
        number = _position(message.item_identifier)
        message.redelivered = number is not None and number <= before.get(scope, -1)
        if seen is not None and number is not None:
            seen[scope] = max(number, seen.get(scope, -1))
        yield message


def _position(sequence_number: object) -> int | None:
    text = str(sequence_number)
    return int(text) if text.isdigit() else None


def _dynamodb_message(record: object, index: int) -> InboundMessage:
    if not isinstance(record, dict):
        raise MalformedRecord(f"DynamoDB stream record {index} is not an object")
    change = record.get("dynamodb")
    change = change if isinstance(change, dict) else {}
    sequence_number = required_text(change.get("SequenceNumber"), f"DynamoDB stream record {index}")
    delivery_id = text_or_none(record.get("eventID")) or sequence_number
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
        source=text_or_none(record.get("eventSourceARN")) or "dynamodb",
        sequence=index,
        ordering_scope=text_or_none(record.get("eventSourceARN")) or "dynamodb",
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
    from lambda_inbox.store._attribute_values import MalformedAttributeValue, read_image

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


def required_text(value: object, what: str) -> str:
    """A sequence number: without one, no failure of the record could be reported."""
    if isinstance(value, str) and value:
        return value
    raise MalformedRecord(f"{what} has no sequence number")


def text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
