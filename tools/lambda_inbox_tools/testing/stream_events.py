"""Kinesis Data Streams and DynamoDB Streams records and events as their event sources deliver
them (the shapes of AWS's samples, tests/fixtures/aws/kinesis-event.json and
dynamodb-streams-event.json).

A batch comes from one shard; a record is named by its sequence number, and Lambda retries a
shard from the lowest sequence number a response reports.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from ..lambda_records import as_event_json
from ..local import stream_poller
from ..services.offline import ACCOUNT, REGION

#: The stream a built Kinesis record comes from unless `arn` is given.
KINESIS_STREAM_ARN = f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/local-stream"
#: The table stream a built DynamoDB stream record comes from unless `arn` is given.
DYNAMODB_STREAM_ARN = (
    f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/local-table/stream/2024-11-21T12:00:00.000"
)
#: 2024-11-21T12:06:00Z: the arrival time of a record built without one, in epoch seconds.
ARRIVAL_TIMESTAMP = 1732190760.0
#: Sequence numbers of built records: this, plus the position given, padded like Kinesis's.
SEQUENCE_BASE = 49590338271490256608559692538361571095921575989136588898
StreamEventName = Literal["INSERT", "MODIFY", "REMOVE"]


def sequence_number(position: int) -> str:
    """The sequence number of the record at `position` of a built shard (increasing)."""
    return str(SEQUENCE_BASE + position)


def kinesis_record(
    position: int,
    data: Mapping[str, Any] | bytes,
    *,
    partition_key: str = "1",
    shard_id: str = "shardId-000000000000",
    arn: str = KINESIS_STREAM_ARN,
    arrival: float | None = None,
) -> dict[str, Any]:
    """One Kinesis record at `position` of its shard: `data` as base64 (a mapping is sent as
    compact JSON; build binary values with `lambda_inbox_tools.testing.values`)."""
    if isinstance(data, Mapping):
        data = json.dumps(dict(data), separators=(",", ":")).encode("utf-8")
    number = sequence_number(position)
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key,
            "sequenceNumber": number,
            "data": base64.b64encode(data).decode("ascii"),
            "approximateArrivalTimestamp": ARRIVAL_TIMESTAMP + position
            if arrival is None
            else arrival,
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{shard_id}:{number}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": f"arn:aws:iam::{ACCOUNT}:role/lambda-role",
        "awsRegion": REGION,
        "eventSourceARN": arn,
    }


def aggregated_data(records: Sequence[tuple[str, Mapping[str, Any] | bytes]]) -> bytes:
    """The data of a Kinesis record the Kinesis Producer Library aggregated from `records`
    (`(partition_key, data)`, a mapping sent as compact JSON): the magic bytes, the
    `AggregatedRecord` protobuf and its MD5 digest (needs the `protobuf` package)."""
    from lambda_inbox.wire import KPL_MAGIC, aggregated_record_class

    aggregate = aggregated_record_class()()
    keys: list[str] = []
    for key, data in records:
        if key not in keys:
            keys.append(key)
            aggregate.partition_key_table.append(key)
        if isinstance(data, Mapping):
            data = json.dumps(dict(data), separators=(",", ":")).encode("utf-8")
        aggregate.records.add(partition_key_index=keys.index(key), data=data)
    body: bytes = aggregate.SerializeToString()
    return KPL_MAGIC + body + hashlib.md5(body, usedforsecurity=False).digest()


def aggregated_kinesis_record(
    position: int,
    records: Sequence[tuple[str, Mapping[str, Any] | bytes]],
    *,
    shard_id: str = "shardId-000000000000",
    arn: str = KINESIS_STREAM_ARN,
) -> dict[str, Any]:
    """One Kinesis record at `position` holding `records` (`(partition_key, data)`) aggregated
    as the KPL does (`aggregated_data`); its own partition key is the first record's, as the
    KPL's is. The consumer reads one message per user record."""
    return kinesis_record(
        position,
        aggregated_data(records),
        partition_key=records[0][0] if records else "1",
        shard_id=shard_id,
        arn=arn,
    )


def dynamodb_stream_record(
    position: int,
    keys: Mapping[str, Any],
    *,
    new_image: Mapping[str, Any] | None = None,
    old_image: Mapping[str, Any] | None = None,
    event_name: StreamEventName | None = None,
    event_id: str | None = None,
    arn: str = DYNAMODB_STREAM_ARN,
) -> dict[str, Any]:
    """One DynamoDB stream record (`NEW_AND_OLD_IMAGES`) at `position` of its shard, the keys
    and images given as plain values (serialized as DynamoDB JSON). `event_name` defaults to
    what the images say: INSERT (new only), MODIFY (both), REMOVE (old only)."""
    from boto3.dynamodb.types import TypeSerializer

    serializer = TypeSerializer()

    def serialized(values: Mapping[str, Any]) -> dict[str, Any]:
        return {name: as_event_json(serializer.serialize(value)) for name, value in values.items()}

    change: dict[str, Any] = {
        "ApproximateCreationDateTime": int(ARRIVAL_TIMESTAMP) + position,
        "Keys": serialized(keys),
        "SequenceNumber": sequence_number(position),
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    if new_image is not None:
        change["NewImage"] = serialized(new_image)
    if old_image is not None:
        change["OldImage"] = serialized(old_image)
    change["SizeBytes"] = len(json.dumps(change))
    if event_name is None:
        event_name = "REMOVE" if new_image is None else "MODIFY" if old_image else "INSERT"
    return {
        "eventID": event_id or f"{position:032x}",
        "eventName": event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": REGION,
        "dynamodb": change,
        "eventSourceARN": arn,
    }


def stream_image(record: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB stream record's new image, else its old one, as plain values (as the inbox
    reads them: `lambda_inbox.streams.stream_document`)."""
    from lambda_inbox.wire import stream_document

    document = stream_document(record)
    image: dict[str, Any] = document["NewImage"] or document["OldImage"] or {}
    return image


def kinesis_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A Kinesis event of `records` (of one shard), in sequence order."""
    return _in_sequence(records)


def dynamodb_stream_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A DynamoDB Streams event of `records` (of one shard), in sequence order."""
    return _in_sequence(records)


def _in_sequence(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {"Records": sorted((dict(r) for r in records), key=lambda r: int(record_sequence(r)))}


def record_sequence(record: Mapping[str, Any]) -> str:
    """The sequence number of a Kinesis or DynamoDB stream record."""
    return stream_poller.sequence_number(record)


def shard_of(record: Mapping[str, Any]) -> str:
    """The shard a record comes from: the stream and, for Kinesis, the shard named in its
    `eventID` (a DynamoDB stream record does not name its shard: the stream)."""
    stream = str(record.get("eventSourceARN", ""))
    if "kinesis" in record:
        return f"{stream}#{str(record['eventID']).split(':', 1)[0]}"
    return stream


def produced_again(record: Mapping[str, Any], number: str) -> dict[str, Any]:
    """A Kinesis record put again by its producer (a retry after a lost answer): the same data
    and partition key under a new sequence number `number` and its `eventID`."""
    again = dict(record)
    again["kinesis"] = {**record["kinesis"], "sequenceNumber": number}
    again["eventID"] = f"{str(record['eventID']).split(':', 1)[0]}:{number}"
    return again
