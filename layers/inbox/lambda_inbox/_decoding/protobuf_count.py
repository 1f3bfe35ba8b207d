"""A Protobuf record's values counted on the wire, before it is parsed (`limits`).

Parsing builds every element of a repeated field, and an empty sub-message costs two bytes on
the wire and some twenty in memory: a few megabytes of them would fill a small function before
any count could be made of the parsed message. So a record large enough to hold more values than
`max_values` (every value takes at least one byte on the wire) is walked first, with the message
descriptor telling sub-messages from bytes and packed elements from single values, and refused
as soon as the count passes the limit. Fields the descriptor does not know are skipped: they
are not in the document. Loaded by the first Protobuf value that large.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

if TYPE_CHECKING:
    from lambda_inbox._decoding.limits import Budget

#: Elements of these types are packed at a fixed width; the other numbers are varints.
_WIDTHS = {
    FieldDescriptor.TYPE_DOUBLE: 8,
    FieldDescriptor.TYPE_FIXED64: 8,
    FieldDescriptor.TYPE_SFIXED64: 8,
    FieldDescriptor.TYPE_FLOAT: 4,
    FieldDescriptor.TYPE_FIXED32: 4,
    FieldDescriptor.TYPE_SFIXED32: 4,
}
_NOT_PACKED = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES)
#: The bytes that continue a varint: deleted, what remains is one byte per packed varint.
_CONTINUATION = bytes(range(0x80, 0x100))
#: protobuf's own nesting limit: deeper records do not parse.
_MAX_DEPTH = 100
_END_GROUP = 4


class MalformedRecord(ValueError):
    """The record is not in Protobuf's wire format (the parser would refuse it too)."""


def protobuf_record(record: bytes, schema_id: str | None, *, indexed: bool) -> bytes:
    """The Protobuf record without the framing in front of it, when a schema id (metadata or a
    Confluent prefix) says there is one (`indexed`): a Glue Schema Registry producer's byte (an
    id longer than 20 characters, a UUID) or Confluent's message-index list (a zigzag varint
    count, 0 for the list `[0]`, then that many varints). Bytes that end inside the list are
    left as they are: they do not parse either way."""
    if not indexed:
        return record
    if schema_id is not None and len(schema_id) > 20:
        return record[1:]
    data = memoryview(record)
    try:
        count, position = _varint(data, 0, len(data))
        for _ in range((count >> 1) ^ -(count & 1)):
            _, position = _varint(data, position, len(data))
    except MalformedRecord:
        return record
    return record[position:]


def count_values(record: bytes, descriptor: Descriptor, budget: Budget) -> None:
    """Spend on `budget` one value per field and element `record` holds (`TooLarge` past the
    limit); `MalformedRecord` for bytes that are not a Protobuf record."""
    data = memoryview(record)
    if _count(data, 0, len(data), descriptor, budget, 0) != len(data):
        raise MalformedRecord("an end-group tag outside any group")


def _count(
    data: memoryview,
    position: int,
    end: int,
    descriptor: Descriptor | None,
    budget: Budget,
    depth: int,
) -> int:
    """Count the fields from `position` to `end`, or to the end-group tag that closes the group
    being read (returns the position after it)."""
    if depth > _MAX_DEPTH:
        raise MalformedRecord("nested more deeply than Protobuf parses")
    fields: Any = descriptor.fields_by_number if descriptor is not None else {}
    while position < end:
        key, position = _varint(data, position, end)
        wire = key & 7
        if wire == _END_GROUP:
            return position
        field: FieldDescriptor | None = fields.get(key >> 3)
        values = 1
        if wire == 0:
            _, position = _varint(data, position, end)
        elif wire == 1 or wire == 5:
            position += 8 if wire == 1 else 4
        elif wire == 2:
            length, position = _varint(data, position, end)
            start, position = position, position + length
            if position > end:
                raise MalformedRecord("a field runs past the end of the record")
            if field is not None and field.message_type is not None:
                _count(data, start, position, field.message_type, budget, depth + 1)
            elif field is not None and field.is_repeated and field.type not in _NOT_PACKED:
                values = _packed(data[start:position], field.type)
        elif wire == 3:
            inner = field.message_type if field is not None else None
            position = _count(data, position, end, inner, budget, depth + 1)
        else:
            raise MalformedRecord(f"wire type {wire} is not Protobuf's")
        if field is not None:
            budget.spend(values)
    if position > end:
        raise MalformedRecord("a field runs past the end of the record")
    return position


def _packed(elements: memoryview, field_type: int) -> int:
    width = _WIDTHS.get(field_type)
    if width is not None:
        return len(elements) // width
    return len(bytes(elements).translate(None, _CONTINUATION))


def _varint(data: memoryview, position: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while position < end and shift < 70:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    raise MalformedRecord("a varint runs past the end of the record")
