"""Kafka (MSK and self-managed) batch semantics: records per partition, in offset order.

Decoding never raises here: a value that is null (a tombstone) or not base64 becomes a message
that the inbox dead-letters as poison (its raw text kept), so one bad record cannot take the
batch down.
After a failure in a partition, that record and every later record of the partition are
reported for redelivery; other partitions continue.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lambda_inbox._errors import MalformedRecord
from lambda_inbox._messages import AttributeValue, InboundMessage
from lambda_inbox._outcomes import MessageResult
from lambda_inbox._sources.fields import base64_bytes, raw_text, string_attribute
from lambda_inbox._sources.redriven import is_sqs_text

if TYPE_CHECKING:
    from lambda_inbox._sources.values import ValueFormats


def parse_kafka_event(
    event: Mapping[str, Any],
    formats: ValueFormats | None = None,
    seen: dict[str, int] | None = None,
) -> list[InboundMessage]:
    """The event's records in offset order per partition. `seen` maps each partition to the
    highest offset received before (in this execution environment): a record at or below it is
    `redelivered` (a retried batch, a rewind after a rebalance). It is updated with this batch.
    """
    partitions = event.get("records")
    if not isinstance(partitions, dict):
        raise MalformedRecord("a Kafka event needs a 'records' mapping of topic-partition lists")
    raw_records: list[tuple[str, int, dict[str, Any]]] = []
    for topic_partition, records in partitions.items():
        if not isinstance(records, list):
            raise MalformedRecord(f"records[{topic_partition!r}] is not a list")
        for record in records:
            if not isinstance(record, dict) or not isinstance(record.get("offset"), int):
                raise MalformedRecord(f"a record of {topic_partition!r} has no integer offset")
            raw_records.append((str(topic_partition), record["offset"], record))
    raw_records.sort(key=lambda entry: (entry[0], entry[1]))
    before = dict(seen) if seen else {}
    messages = [
        _to_message(
            topic_partition, record, sequence, formats, offset <= before.get(topic_partition, -1)
        )
        for sequence, (topic_partition, offset, record) in enumerate(raw_records)
    ]
    if seen is not None:
        for topic_partition, offset, _ in raw_records:  # sorted: the last one is the highest
            seen[topic_partition] = max(offset, before.get(topic_partition, -1))
    return messages


def _to_message(
    topic_partition: str,
    record: dict[str, Any],
    sequence: int,
    formats: ValueFormats | None,
    redelivered: bool = False,
) -> InboundMessage:
    topic = str(record.get("topic") or topic_partition.rsplit("-", 1)[0])
    partition = record.get("partition", topic_partition.rsplit("-", 1)[-1])
    offset: int = record["offset"]
    headers = _decode_headers(record.get("headers"))
    key = base64_bytes(record.get("key"))
    delivery_id = f"{topic}-{partition}-{offset}"
    dead_letter: dict[str, AttributeValue] = {
        "kafka-topic": string_attribute(topic),
        "kafka-partition": string_attribute(str(partition)),
        "kafka-offset": string_attribute(str(offset)),
    }
    if key is not None:
        key_text = _utf8(key)
        dead_letter["kafka-key"] = (
            string_attribute(key_text)
            if key_text is not None and (not key or is_sqs_text(key_text))
            else {"DataType": "Binary", "BinaryValue": key}
        )
    texts = {name: text for name, value in headers.items() if (text := _utf8(value)) is not None}
    if texts:
        dead_letter["kafka-headers"] = string_attribute(json.dumps(texts))
    binary = {
        name: base64.b64encode(value).decode("ascii")
        for name, value in headers.items()
        if name not in texts
    }
    if binary:  # not UTF-8: kept exactly, as base64
        dead_letter["kafka-headers-base64"] = string_attribute(json.dumps(binary))
    raw_value = record.get("value")
    value = base64_bytes(raw_value)
    decode_error = None
    if raw_value is None:  # a tombstone: there are no bytes to recover
        dead_letter["kafka-tombstone"] = string_attribute("true")
        decode_error = "value is null (a tombstone)"
    elif value is None:
        decode_error = "value is not valid base64"
    metadata = record.get("valueSchemaMetadata")
    reading: dict[str, Any] = {}
    if formats is not None or metadata is not None or (value or b"")[:1] == b"\x00":
        from lambda_inbox._sources.values import (
            read_value,  # JSON-only consumers of JSON values never load it
        )

        reading = read_value(value, metadata, formats, dead_letter)
    return InboundMessage(
        item_identifier={"topic-partition": topic_partition, "offset": offset},
        delivery_id=delivery_id,
        body=value if value is not None else raw_text(raw_value),
        decode_error=decode_error,
        source=delivery_id,
        sequence=sequence,
        attributes={name: _header_text(value) for name, value in headers.items()},
        ordering_scope=topic_partition,
        dead_letter_attributes=dead_letter,
        redelivered=redelivered,
        **reading,
    )


def _utf8(value: bytes) -> str | None:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _header_text(value: bytes) -> str:
    """A header value as text for the key strategies: its UTF-8 text, or, when it is not UTF-8,
    `base64:` and its bytes in base64 (distinct values stay distinct keys)."""
    text = _utf8(value)
    return text if text is not None else "base64:" + base64.b64encode(value).decode("ascii")


def _decode_headers(raw: object) -> dict[str, bytes]:
    """Kafka headers arrive as `[{"name": [byte, ...]}, ...]`, each byte a *signed* Java byte
    (-128..127), or from some producers unsigned (0..255); both are read as `byte & 0xFF`. A
    list holding anything else is left out; a value that is not a list is empty. Later
    duplicates win."""
    headers: dict[str, bytes] = {}
    if not isinstance(raw, list):
        return headers
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        for name, value in entry.items():
            if not isinstance(value, list):
                headers[str(name)] = b""
            elif all(
                isinstance(byte, int) and not isinstance(byte, bool) and -128 <= byte <= 255
                for byte in value
            ):
                headers[str(name)] = bytes(byte & 0xFF for byte in value)
    return headers


def kafka_response(results: Iterable[MessageResult]) -> dict[str, list[dict[str, Any]]]:
    """Partial batch response in the shape Lambda documents for Kafka event sources."""
    return {
        "batchItemFailures": [
            {"itemIdentifier": result.message.item_identifier}
            for result in sorted(results, key=lambda result: result.message.sequence)
            if result.outcome.needs_redelivery
        ]
    }
