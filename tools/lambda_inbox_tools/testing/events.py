"""Lambda events as the event sources deliver them, for a consumer's tests: SQS (standard and
FIFO) records and events, Kafka (MSK and self-managed) records and events, and a message
delivered again (`delivered_again`). What a handler's answer does to them is read in
`delivery` (`event_after`, `failed_ids`, ...).

SQS message attributes come in two spellings: a Lambda record's (`stringValue`, `dataType`,
base64 `binaryValue`) and SendMessage/ReceiveMessage's (`StringValue`, `DataType`, raw
`BinaryValue`); `received_attributes` and `lambda_attributes` convert between them.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import itertools
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..services.offline import ACCOUNT, REGION
from .stream_events import stream_image

#: The queue a built SQS record comes from unless `arn` is given.
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:local-queue"
#: The FIFO queue a built record with a message group comes from unless `arn` is given.
FIFO_QUEUE_ARN = f"{QUEUE_ARN}.fifo"
#: The cluster a built Kafka event comes from unless `arn` is given.
MSK_CLUSTER_ARN = f"arn:aws:kafka:{REGION}:{ACCOUNT}:cluster/local/test"
#: The bootstrap servers a built Kafka event names unless others are given.
BOOTSTRAP_SERVERS = "b-1.test.local.kafka.us-east-1.amazonaws.com:9098"
_fifo_sequence = itertools.count(18849496460467696128)
#: The `SenderId` of a built SQS record unless `sender_id` is given: an IAM user's unique id, as
#: SQS gives a user's messages (a role's messages carry `AROA...:<session>`; docs/security.md).
SENDER_ID = "AIDAEXAMPLEPRODUCER01"
#: 2024-11-21T12:02:00Z: when the built SQS messages were sent, in epoch milliseconds.
SENT_TIMESTAMP_MS = 1732190520000
#: 2024-11-21T12:06:00Z: the create time of Kafka record offset 0, in epoch milliseconds.
KAFKA_TIMESTAMP_MS = 1732190760000


# ---- SQS ----------------------------------------------------------------------------------------


def string_attribute(value: str) -> dict[str, Any]:
    """A String message attribute as a Lambda SQS record carries it."""
    return {
        "stringValue": value,
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }


def binary_attribute(value: bytes) -> dict[str, Any]:
    """A Binary message attribute as a Lambda SQS record carries it (base64)."""
    return {
        "binaryValue": base64.b64encode(value).decode("ascii"),
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "Binary",
    }


def received_attributes(attributes: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A Lambda record's `messageAttributes` as SendMessage and ReceiveMessage spell them."""
    converted: dict[str, dict[str, Any]] = {}
    for name, value in attributes.items():
        if value.get("stringValue") is not None:
            converted[name] = {"DataType": value["dataType"], "StringValue": value["stringValue"]}
        else:
            binary = base64.b64decode(value["binaryValue"])
            converted[name] = {"DataType": value["dataType"], "BinaryValue": binary}
    return converted


def lambda_attributes(attributes: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """ReceiveMessage's `MessageAttributes` as a Lambda SQS record carries them."""
    converted: dict[str, dict[str, Any]] = {}
    for name, value in attributes.items():
        if "StringValue" in value:
            converted[name] = string_attribute(value["StringValue"])
        else:
            converted[name] = binary_attribute(value["BinaryValue"])
        converted[name]["dataType"] = value["DataType"]
    return converted


def _receipt_handle() -> str:
    return "AQEB" + base64.b64encode(uuid.uuid4().bytes).decode("ascii")


def sqs_record(
    body: str | Mapping[str, Any],
    *,
    message_id: str | None = None,
    arn: str | None = None,
    group: str | None = None,
    dedup: str | None = None,
    receive_count: int = 1,
    message_attributes: Mapping[str, Any] | None = None,
    sender_id: str = SENDER_ID,
) -> dict[str, Any]:
    """One record of a Lambda SQS event, in the shape of AWS's sample
    (tests/fixtures/aws/sqs-event-*.json). A mapping body is sent as compact JSON; `messageId`
    is new unless given; `sender_id` is the `SenderId` SQS set (the principal that sent it:
    `AIDA...` for a user, `AROA...:<session>` for a role). `group` / `dedup` are the FIFO `MessageGroupId` and
    `MessageDeduplicationId`: a record with a group comes from a FIFO queue (`arn` ending in
    `.fifo`, `FIFO_QUEUE_ARN` unless given) and carries its `SequenceNumber`, as FIFO records
    do; a FIFO `arn` without a group, or a group on a standard queue's `arn`, is a ValueError
    (SQS has neither)."""
    arn = arn or (FIFO_QUEUE_ARN if group is not None else QUEUE_ARN)
    if (group is not None) != arn.endswith(".fifo"):
        raise ValueError(
            f"{arn} is {'a FIFO' if arn.endswith('.fifo') else 'a standard'} queue: a FIFO "
            "queue's records have a group (group=...), a standard queue's none"
        )
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    attributes = {
        "ApproximateReceiveCount": str(receive_count),
        "SentTimestamp": str(SENT_TIMESTAMP_MS),
        "SenderId": sender_id,
        "ApproximateFirstReceiveTimestamp": str(SENT_TIMESTAMP_MS + 37),
    }
    if group is not None:
        attributes["SequenceNumber"] = str(next(_fifo_sequence))
        attributes["MessageGroupId"] = group
    if dedup is not None:
        attributes["MessageDeduplicationId"] = dedup
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": _receipt_handle(),
        "body": text,
        "attributes": attributes,
        "messageAttributes": dict(message_attributes or {}),
        "md5OfBody": hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": REGION,
    }


def sqs_record_from(
    message: Mapping[str, Any], *, arn: str, message_id: str | None = None
) -> dict[str, Any]:
    """The Lambda SQS record of a message received from the queue `arn` (ReceiveMessage shape:
    `MessageId`, `Body`, `MessageAttributes`, ...), as the event source would deliver it."""
    body = str(message["Body"])
    return {
        "messageId": message_id or message["MessageId"],
        "receiptHandle": message.get("ReceiptHandle") or _receipt_handle(),
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1", **message.get("Attributes", {})},
        "messageAttributes": lambda_attributes(message.get("MessageAttributes", {})),
        "md5OfBody": hashlib.md5(body.encode("utf-8"), usedforsecurity=False).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": REGION,
    }


def sqs_event(*records: Mapping[str, Any]) -> dict[str, Any]:
    """A Lambda SQS event holding `records`."""
    return {"Records": [dict(record) for record in records]}


def delivered_again(record: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the SQS record `record` as the queue delivers the same message again: the same
    messageId and body, a new receipt handle, its receive count + 1."""
    again: dict[str, Any] = copy.deepcopy(dict(record))
    again["receiptHandle"] = _receipt_handle()
    count = int(again["attributes"]["ApproximateReceiveCount"]) + 1
    again["attributes"]["ApproximateReceiveCount"] = str(count)
    return again


# ---- Kafka (MSK) --------------------------------------------------------------------------------


def kafka_record(
    partition: int,
    offset: int,
    value: Mapping[str, Any] | bytes | None,
    *,
    key: bytes | None = None,
    headers: Mapping[str, bytes] | Sequence[tuple[str, bytes | None]] | None = None,
    topic: str = "payments",
    timestamp: int | None = None,
    timestamp_type: str = "CREATE_TIME",
    value_schema: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One record as the MSK event source delivers it: base64 key and value (a mapping value is
    sent as compact JSON; None leaves the value out), headers as lists of byte values.
    `value_schema` is the `valueSchemaMetadata` an event source mapping with a schema registry
    adds (`{"dataFormat": "AVRO", "schemaId": "..."}`); build binary values with
    `lambda_inbox_tools.testing.values`."""
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or [])
    raw: dict[str, Any] = {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "timestamp": KAFKA_TIMESTAMP_MS + offset if timestamp is None else timestamp,
        "timestampType": timestamp_type,
        "headers": [{name: list(data or b"")} for name, data in pairs],
    }
    if isinstance(value, Mapping):
        value = json.dumps(dict(value), separators=(",", ":")).encode("utf-8")
    if value is not None:
        raw["value"] = base64.b64encode(value).decode("ascii")
    if key is not None:
        raw["key"] = base64.b64encode(key).decode("ascii")
    if value_schema is not None:
        raw["valueSchemaMetadata"] = dict(value_schema)
    return raw


def kafka_event(
    records: Iterable[Mapping[str, Any]],
    *,
    arn: str = MSK_CLUSTER_ARN,
    bootstrap_servers: str = BOOTSTRAP_SERVERS,
    self_managed: bool = False,
) -> dict[str, Any]:
    """An MSK event (`self_managed`: a self-managed cluster's, `SelfManagedKafka` without an
    ARN), in the shape of AWS's samples (tests/fixtures/aws/msk-event.json): records grouped by
    `topic-partition`, each partition in offset order."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for raw in records:
        grouped.setdefault(f"{raw['topic']}-{raw['partition']}", []).append(dict(raw))
    for partition_records in grouped.values():
        partition_records.sort(key=lambda raw: int(raw["offset"]))
    if self_managed:
        return {
            "eventSource": "SelfManagedKafka",
            "bootstrapServers": bootstrap_servers,
            "records": grouped,
        }
    return {
        "eventSource": "aws:kafka",
        "eventSourceArn": arn,
        "bootstrapServers": bootstrap_servers,
        "records": grouped,
    }


def payload(record: Mapping[str, Any]) -> Any:
    """The JSON a built record carries: an SQS record's body, a Kafka record's value, a Kinesis
    record's data; a DynamoDB stream record's new image (else its old one) as plain values."""
    if "body" in record:
        return json.loads(record["body"])
    if "kinesis" in record:
        return json.loads(base64.b64decode(record["kinesis"]["data"]))
    if "dynamodb" in record:
        return stream_image(record)
    return json.loads(base64.b64decode(record["value"]))


def record_id(record: Mapping[str, Any]) -> str:
    """What identifies a delivery of `record` to its event source: an SQS `messageId`, a Kafka
    `topic-partition@offset`, a stream record's `eventID`."""
    if "messageId" in record:
        return str(record["messageId"])
    if "eventID" in record:
        return str(record["eventID"])
    return f"{record['topic']}-{record['partition']}@{record['offset']}"
