"""Lambda events as the event sources deliver them: SQS (standard and FIFO) and Kafka (MSK)
records and events, the sample events of `events/`, redeliveries, and readers of the partial
batch responses.

SQS message attributes come in two spellings: a Lambda record's (`stringValue`, `dataType`,
base64 `binaryValue`) and SendMessage/ReceiveMessage's (`StringValue`, `DataType`, raw
`BinaryValue`); `received_attributes` and `lambda_attributes` convert between them.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from devkit.paths import EVENTS_DIR
from lambda_inbox import InboundMessage
from lambda_inbox.sqs import parse_sqs_event
from lambda_inbox_tools.services.offline import ACCOUNT, REGION

ORDER_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lambda-inbox-OrderEventsQueue"
ORDER_FIFO_QUEUE_ARN = f"{ORDER_QUEUE_ARN}.fifo"
PAYMENT_REPLAY_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lambda-inbox-PaymentReplayQueue"
MSK_CLUSTER_ARN = f"arn:aws:kafka:{REGION}:{ACCOUNT}:cluster/payments/test"
#: 2024-11-21T12:02:00Z: when the built SQS messages were sent, in epoch milliseconds.
SENT_TIMESTAMP_MS = 1732190520000
#: 2024-11-21T12:06:00Z: the create time of Kafka record offset 0, in epoch milliseconds.
KAFKA_TIMESTAMP_MS = 1732190760000

# ---- sample events ------------------------------------------------------------------------------


def load_event(name: str) -> dict[str, Any]:
    """A sample event of `events/` (e.g. "sqs-order-single.json"), freshly read."""
    loaded: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text())
    return loaded


def sample_event_names(prefix: str) -> list[str]:
    """The file names of the sample events starting with `prefix` (e.g. "sqs-"), sorted."""
    return sorted(path.name for path in EVENTS_DIR.glob(f"{prefix}*.json"))


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
    arn: str = ORDER_QUEUE_ARN,
    group: str | None = None,
    dedup: str | None = None,
    receive_count: int = 1,
    message_attributes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One record of a Lambda SQS event. A mapping body is sent as compact JSON; `messageId`
    is new unless given; `group` / `dedup` are the FIFO `MessageGroupId` and
    `MessageDeduplicationId` (use a FIFO `arn` with them, e.g. `ORDER_FIFO_QUEUE_ARN`)."""
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    attributes = {
        "ApproximateReceiveCount": str(receive_count),
        "SentTimestamp": str(SENT_TIMESTAMP_MS),
        "SenderId": "AIDAEXAMPLEPRODUCER01",
        "ApproximateFirstReceiveTimestamp": str(SENT_TIMESTAMP_MS + 37),
    }
    if group is not None:
        attributes["MessageGroupId"] = group
    if dedup is not None:
        attributes["MessageDeduplicationId"] = dedup
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": _receipt_handle(),
        "body": text,
        "attributes": attributes,
        "messageAttributes": dict(message_attributes or {}),
        "md5OfBody": hashlib.md5(text.encode("utf-8")).hexdigest(),
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
        "md5OfBody": hashlib.md5(body.encode("utf-8")).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": REGION,
    }


def sqs_event(*records: Mapping[str, Any]) -> dict[str, Any]:
    """A Lambda SQS event holding `records`."""
    return {"Records": [dict(record) for record in records]}


def replayed(dead_letter: Mapping[str, Any], *, arn: str = ORDER_QUEUE_ARN) -> InboundMessage:
    """The message the SQS adapter reads when `dead_letter` (as ReceiveMessage returns it) is
    redriven to the queue `arn`: `body` is the original bytes the dead-letter envelope carries,
    `attributes` the original message attributes."""
    (message,) = parse_sqs_event(sqs_event(sqs_record_from(dead_letter, arn=arn)))
    return message


def redeliver(record: Mapping[str, Any]) -> dict[str, Any]:
    """The same SQS message delivered again: same messageId, new receipt handle, count + 1."""
    again: dict[str, Any] = copy.deepcopy(dict(record))
    again["receiptHandle"] = _receipt_handle()
    count = int(again["attributes"]["ApproximateReceiveCount"]) + 1
    again["attributes"]["ApproximateReceiveCount"] = str(count)
    return again


def failed_ids(response: Mapping[str, Any]) -> list[str]:
    """The messageIds an SQS partial batch response reports, in order."""
    return [str(item["itemIdentifier"]) for item in response["batchItemFailures"]]


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
) -> dict[str, Any]:
    """One record as the MSK event source delivers it: base64 key and value (a mapping value is
    sent as compact JSON; None leaves the value out), headers as lists of byte values."""
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
    return raw


def kafka_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """An MSK event: records grouped by `topic-partition`, each partition in offset order."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for raw in records:
        grouped.setdefault(f"{raw['topic']}-{raw['partition']}", []).append(dict(raw))
    for partition_records in grouped.values():
        partition_records.sort(key=lambda raw: int(raw["offset"]))
    return {"eventSource": "aws:kafka", "eventSourceArn": MSK_CLUSTER_ARN, "records": grouped}


def failed_offsets(response: Mapping[str, Any]) -> list[tuple[str, int]]:
    """The (topic-partition, offset) pairs a Kafka partial batch response reports, in order."""
    return [
        (item["itemIdentifier"]["topic-partition"], int(item["itemIdentifier"]["offset"]))
        for item in response["batchItemFailures"]
    ]


def redelivery(event: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the event source delivers after `response` (a partial batch response to `event`):
    for Kafka, per reported partition every record from the first reported offset on; for SQS,
    the reported messages again (`redeliver`). None when nothing was reported; AssertionError
    when the response reports a record the event does not hold."""
    if "Records" in event:
        records = event["Records"]
        failed = set(failed_ids(response))
        assert failed <= {str(record["messageId"]) for record in records}, failed
        again = [redeliver(record) for record in records if record["messageId"] in failed]
        return sqs_event(*again) if again else None
    first_failed: dict[str, int] = {}
    for partition, offset in failed_offsets(response):
        offsets = [int(raw["offset"]) for raw in event["records"].get(partition, [])]
        assert offset in offsets, (partition, offset)
        first_failed[partition] = min(offset, first_failed.get(partition, offset))
    if not first_failed:
        return None
    return {
        **event,
        "records": {
            partition: [raw for raw in records if int(raw["offset"]) >= first_failed[partition]]
            for partition, records in event["records"].items()
            if partition in first_failed
        },
    }


# ---- parsed messages ----------------------------------------------------------------------------


def inbound_message(
    body: bytes | str = b"{}",
    *,
    delivery_id: str = "m-1",
    sequence: int = 0,
    source: str = ORDER_QUEUE_ARN,
    attributes: dict[str, str] | None = None,
    deduplication_id: str | None = None,
    **fields: Any,
) -> InboundMessage:
    """A message as the SQS or Kafka adapter hands it to the engine (item identifier =
    delivery id); `fields` sets the other `InboundMessage` fields."""
    return InboundMessage(
        item_identifier=delivery_id,
        delivery_id=delivery_id,
        body=body.encode("utf-8") if isinstance(body, str) else body,
        source=source,
        sequence=sequence,
        attributes=attributes or {},
        deduplication_id=deduplication_id,
        **fields,
    )
