"""Stream records as Lambda delivers them, made from a `GetRecords` result: one Kinesis record,
one DynamoDB Streams record. The local stack's pollers deliver them, and `replay` rebuilds what
a stream's event source gave up on; the shapes are those of AWS's samples
(tests/fixtures/aws/kinesis-event.json, dynamodb-streams-event.json).

The region and the account come from the stream's ARN, as Lambda's own records carry the
stream's: a record replayed from `eu-west-1` says `eu-west-1`. This module needs nothing but the
standard library, so `lambda-inbox replay` works with the `cli` extra alone.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime
from typing import Any


def arn_region_and_account(arn: str) -> tuple[str, str]:
    """`arn:aws:kinesis:<region>:<account>:stream/<name>` -> (region, account); empty strings
    for a text that is not an ARN."""
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn":
        return "", ""
    return parts[3], parts[4]


def as_event_json(value: Any) -> Any:
    """A Streams API value as JSON carries it: bytes base64, datetimes in epoch seconds."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime):
        return int(value.timestamp())
    if isinstance(value, Mapping):
        return {k: as_event_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [as_event_json(v) for v in value]
    return value


def lambda_stream_record(record: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """One record of the Lambda DynamoDB event from a DynamoDB Streams `GetRecords` record."""
    region, _ = arn_region_and_account(stream_arn)
    return {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": record.get("eventVersion", "1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": as_event_json(record["dynamodb"]),
        "eventSourceARN": stream_arn,
    }


def lambda_kinesis_record(
    raw: Mapping[str, Any], shard_id: str, stream_arn: str, function: str
) -> dict[str, Any]:
    """One record of the Lambda Kinesis event from a Kinesis `GetRecords` record; `function`
    names the role in `invokeIdentityArn` (`<function>-role`)."""
    region, account = arn_region_and_account(stream_arn)
    arrival = raw.get("ApproximateArrivalTimestamp")
    number = str(raw["SequenceNumber"])
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": str(raw.get("PartitionKey", "")),
            "sequenceNumber": number,
            "data": base64.b64encode(bytes(raw.get("Data") or b"")).decode("ascii"),
            "approximateArrivalTimestamp": arrival.timestamp()
            if isinstance(arrival, datetime)
            else float(arrival or 0),
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{shard_id}:{number}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": f"arn:aws:iam::{account}:role/{function}-role",
        "awsRegion": region,
        "eventSourceARN": stream_arn,
    }
