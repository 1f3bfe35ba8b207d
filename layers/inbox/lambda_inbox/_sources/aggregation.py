"""Kinesis records aggregated by AWS's Kinesis Producer Library (KPL), de-aggregated.

The format (the KPL's `aggregation-format.md`, also read by AWS's `aws-kinesis-agg`): the magic
bytes `F3 89 9A C2`, an `AggregatedRecord` protobuf message (a table of partition keys, a table
of explicit hash keys, and the user records, each naming its partition key by index), then the
MD5 digest of that protobuf message. The message is read with `google.protobuf` (the `protobuf`
package: the `kafka-codecs` extra and the KafkaCodecsLayer carry it), its descriptor built here
from the format's `.proto`, so no generated code ships. Loaded by the first aggregated record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from lambda_inbox._sources.fields import KPL_MAGIC as MAGIC

_DIGEST_BYTES = 16


class BadAggregate(ValueError):
    """An aggregated record that cannot be read: the message says why."""


@dataclass(frozen=True, slots=True)
class UserRecord:
    """One record a producer put, as the KPL packed it: its own partition key and data."""

    partition_key: str
    data: bytes


def deaggregate(data: bytes) -> Aggregate:
    """The user records of an aggregated record, read in order as they are asked for;
    `BadAggregate` for one whose MD5 does not match or whose protobuf does not parse. Whether
    its records name partition keys its table holds is `Aggregate.check_keys`."""
    body = data[len(MAGIC) : -_DIGEST_BYTES]
    if len(data) < len(MAGIC) + _DIGEST_BYTES:
        raise BadAggregate("aggregated record shorter than its magic bytes and MD5 digest")
    if hashlib.md5(body, usedforsecurity=False).digest() != data[-_DIGEST_BYTES:]:
        raise BadAggregate("aggregated record's MD5 digest does not match its content")
    try:
        message: Any = aggregated_record_class()()
    except ImportError:
        raise BadAggregate(
            "an aggregated (KPL) record needs the protobuf package: install "
            "lambda-inbox[kafka-codecs] or add the KafkaCodecsLayer"
        ) from None
    try:
        message.ParseFromString(body)
    except Exception as error:  # google.protobuf's DecodeError, a missing required field
        raise BadAggregate(f"aggregated record does not parse ({type(error).__name__})") from None
    if not message.IsInitialized():  # a user record without its partition key index or data
        raise BadAggregate("aggregated record does not parse (required fields missing)")
    return Aggregate(list(message.partition_key_table), message.records)


class Aggregate:
    """The user records of one aggregated record. The parsed message holds them compactly (a
    record of 150,000 user records takes some 10 MB); each `UserRecord` is made only when read,
    so a consumer holds those of the chunk it is processing, never all of them."""

    __slots__ = ("_keys", "_records")

    def __init__(self, keys: list[str], records: Any) -> None:
        self._keys = keys
        self._records = records

    def __len__(self) -> int:
        return len(self._records)

    def check_keys(self) -> None:
        """`BadAggregate` when a user record names a partition key the table does not hold:
        the whole aggregate is then poison, so it is checked before any of it is read (a pass
        over every user record: a tenth of a second for 150,000 on a small function)."""
        keys = len(self._keys)
        for index, record in enumerate(self._records):
            if record.partition_key_index >= keys:
                raise BadAggregate(
                    f"user record {index} names partition key {record.partition_key_index} "
                    f"of a table of {keys}"
                )

    def records(self, start: int = 0) -> Iterator[UserRecord]:
        """The user records from the one at `start`, in order."""
        for index in range(start, len(self._records)):
            record = self._records[index]
            yield UserRecord(self._keys[record.partition_key_index], bytes(record.data))


@cache
def aggregated_record_class() -> Any:
    """The `AggregatedRecord` message class, from the format's `.proto` built at run time."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="lambda_inbox_kpl_aggregation.proto", package="lambda_inbox_kpl", syntax="proto2"
    )
    aggregated = proto.message_type.add(name="AggregatedRecord")
    aggregated.field.add(
        name="partition_key_table", number=1, type=field.TYPE_STRING, label=field.LABEL_REPEATED
    )
    aggregated.field.add(
        name="explicit_hash_key_table",
        number=2,
        type=field.TYPE_STRING,
        label=field.LABEL_REPEATED,
    )
    aggregated.field.add(
        name="records",
        number=3,
        type=field.TYPE_MESSAGE,
        label=field.LABEL_REPEATED,
        type_name=".lambda_inbox_kpl.Record",
    )
    tag = proto.message_type.add(name="Tag")
    tag.field.add(name="key", number=1, type=field.TYPE_STRING, label=field.LABEL_REQUIRED)
    tag.field.add(name="value", number=2, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    record = proto.message_type.add(name="Record")
    record.field.add(
        name="partition_key_index", number=1, type=field.TYPE_UINT64, label=field.LABEL_REQUIRED
    )
    record.field.add(
        name="explicit_hash_key_index",
        number=2,
        type=field.TYPE_UINT64,
        label=field.LABEL_OPTIONAL,
    )
    record.field.add(name="data", number=3, type=field.TYPE_BYTES, label=field.LABEL_REQUIRED)
    record.field.add(
        name="tags",
        number=4,
        type=field.TYPE_MESSAGE,
        label=field.LABEL_REPEATED,
        type_name=".lambda_inbox_kpl.Tag",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    descriptor = pool.FindMessageTypeByName("lambda_inbox_kpl.AggregatedRecord")
    return message_factory.GetMessageClass(descriptor)
