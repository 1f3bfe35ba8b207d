"""Records a hostile sender can write, for the tests and `benchmarks/hostile_cost.py`: a few
bytes of Avro that claim millions of items, a megabyte of Protobuf sub-messages, a zlib stream
of zeros, a Kinesis aggregate of 150,000 user records in about a megabyte."""

from __future__ import annotations

import base64
import json
import zlib
from functools import cache
from typing import Any

from lambda_inbox_tools.testing import aggregated_kinesis_record, sqs_record
from lambda_inbox_tools.testing.events import string_attribute

#: An Avro schema whose items take no byte: an array of nulls.
NULLS_SCHEMA = json.dumps({"type": "array", "items": "null"})


def avro_long(value: int) -> bytes:
    """Avro's encoding of a long: zigzag, then a varint."""
    zigzag = (value << 1) ^ (value >> 63)
    encoded = bytearray()
    while zigzag > 0x7F:
        encoded.append(zigzag & 0x7F | 0x80)
        zigzag >>= 7
    encoded.append(zigzag)
    return bytes(encoded)


def avro_nulls_bomb(items: int) -> bytes:
    """An array of `items` nulls (`NULLS_SCHEMA`) in one block: a handful of bytes."""
    return avro_long(items) + avro_long(0)


@cache
def holder_class() -> Any:
    """A Protobuf message class built at run time: `Holder { string id = 1; repeated Empty
    items = 2; repeated bool flags = 3; Holder child = 4; }` with `Empty {}`."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="devkit_hostile.proto", package="devkit_hostile", syntax="proto3"
    )
    proto.message_type.add(name="Empty")
    holder = proto.message_type.add(name="Holder")
    for number, (name, kind, label, message) in enumerate(
        [
            ("id", field.TYPE_STRING, field.LABEL_OPTIONAL, ""),
            ("items", field.TYPE_MESSAGE, field.LABEL_REPEATED, ".devkit_hostile.Empty"),
            ("flags", field.TYPE_BOOL, field.LABEL_REPEATED, ""),
            ("child", field.TYPE_MESSAGE, field.LABEL_OPTIONAL, ".devkit_hostile.Holder"),
        ],
        start=1,
    ):
        added = holder.field.add(name=name, number=number, type=kind, label=label)
        if message:
            added.type_name = message
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("devkit_hostile.Holder"))


def protobuf_empties_bomb(items: int) -> bytes:
    """A `Holder` of `items` empty sub-messages: two bytes each on the wire."""
    return b"\x12\x00" * items


@cache
def zlib_zeros(size: int) -> bytes:
    """A zlib stream of `size` zero bytes, compressed a megabyte at a time (never held whole):
    128 MiB take 130 KB."""
    stream = zlib.compressobj(9)
    chunk = b"\0" * (1 << 20)
    parts = [
        stream.compress(chunk[: min(len(chunk), size - done)])
        for done in range(0, size, len(chunk))
    ]
    return b"".join(parts) + stream.flush()


def zlib_dead_letter(compressed: bytes, message_id: str) -> dict[str, Any]:
    """An SQS record carrying the zlib stream `compressed` as a dead letter of the inbox whose
    body was compressed (`inbox-body-encoding: zlib+base64`), as it comes back when redriven."""
    return sqs_record(
        base64.b64encode(compressed).decode("ascii"),
        message_id=message_id,
        message_attributes={"inbox-body-encoding": string_attribute("zlib+base64")},
    )


def kpl_fan_out(
    users: int, *, position: int = 0, accounts: int = 10, prefix: str = "u"
) -> dict[str, Any]:
    """A Kinesis record at `position` aggregating `users` user records `{"id": "<prefix>-<n>",
    "account": ..., "amount": 1}` (about 7 bytes of protobuf and 40 of JSON each), over
    `accounts` partition keys."""
    records = [
        (
            f"acct-{n % accounts}",
            {"id": f"{prefix}-{n}", "account": f"acct-{n % accounts}", "amount": 1},
        )
        for n in range(users)
    ]
    return aggregated_kinesis_record(position, records)


def kpl_bomb(users: int, *, position: int = 0) -> dict[str, Any]:
    """A Kinesis record aggregating `users` user records of two bytes each (`{}`), over ten
    partition keys: 150,000 of them take 1.2 MB. Their identity is their place in the
    aggregate (the delivery id `"<eventID>/<index>"`)."""
    return aggregated_kinesis_record(position, [(f"p-{n % 10}", b"{}") for n in range(users)])
