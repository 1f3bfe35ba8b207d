"""Builders for SQS events and readers for moto state, shared by the unit tests."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lambda_inbox.messages import InboundMessage
from tests.support.tables import seed_stock as seed_stock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
STANDARD_ARN = "arn:aws:sqs:us-east-1:123456789012:orders"
FIFO_ARN = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
SKUS = ("SKU-RED-MUG", "SKU-BLUE-CAP", "SKU-GREEN-PEN")


def load_event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text())
    return loaded


def sqs_record(
    body: str,
    *,
    message_id: str | None = None,
    arn: str = STANDARD_ARN,
    group: str | None = None,
    dedup: str | None = None,
    message_attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One record in the shape Lambda delivers from SQS."""
    attributes: dict[str, str] = {"ApproximateReceiveCount": "1", "SentTimestamp": "1732190401000"}
    if group is not None:
        attributes["MessageGroupId"] = group
    if dedup is not None:
        attributes["MessageDeduplicationId"] = dedup
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": "AQEB" + uuid.uuid4().hex,
        "body": body,
        "attributes": attributes,
        "messageAttributes": message_attributes or {},
        "md5OfBody": hashlib.md5(body.encode("utf-8")).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": "us-east-1",
    }


def sqs_event(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


def string_attribute(value: str) -> dict[str, Any]:
    return {
        "stringValue": value,
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }


def binary_attribute(value: bytes) -> dict[str, Any]:
    return {
        "binaryValue": base64.b64encode(value).decode("ascii"),
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "Binary",
    }


def order(
    event_id: str,
    order_id: str | None = None,
    lines: list[tuple[str, int]] | None = None,
    customer_id: str = "cust-001",
) -> dict[str, Any]:
    lines = lines if lines is not None else [("SKU-RED-MUG", 1)]
    return {
        "event_id": event_id,
        "order_id": order_id or event_id.replace("evt", "ord"),
        "customer_id": customer_id,
        "lines": [{"sku": sku, "qty": qty} for sku, qty in lines],
        "total_cents": 100 * sum(qty for _, qty in lines),
    }


def order_body(*args: Any, **kwargs: Any) -> str:
    return json.dumps(order(*args, **kwargs), separators=(",", ":"))


def message(
    body: bytes | str = b"{}",
    *,
    delivery_id: str = "m-1",
    sequence: int = 0,
    attributes: dict[str, str] | None = None,
    deduplication_id: str | None = None,
    **kwargs: Any,
) -> InboundMessage:
    return InboundMessage(
        item_identifier=delivery_id,
        delivery_id=delivery_id,
        body=body.encode("utf-8") if isinstance(body, str) else body,
        source=kwargs.pop("source", STANDARD_ARN),
        sequence=sequence,
        attributes=attributes or {},
        deduplication_id=deduplication_id,
        **kwargs,
    )


def stock_of(client: DynamoDBClient, table: str, sku: str) -> tuple[int, int]:
    item = client.get_item(TableName=table, Key={"pk": {"S": f"SKU#{sku}"}, "sk": {"S": "STOCK"}})[
        "Item"
    ]
    return int(item["available"]["N"]), int(item["reserved"]["N"])


def domain_item(client: DynamoDBClient, table: str, pk: str, sk: str) -> dict[str, Any] | None:
    item = client.get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}}).get("Item")
    return dict(item) if item else None


def inbox_item(
    client: DynamoDBClient, table: str, consumer: str, key: str
) -> dict[str, Any] | None:
    item = client.get_item(TableName=table, Key={"pk": {"S": f"{consumer}#{key}"}}).get("Item")
    return dict(item) if item else None


def scan_all(client: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    return [dict(item) for item in client.scan(TableName=table)["Items"]]


def drain(client: SQSClient, queue_url: str) -> list[MessageTypeDef]:
    """Every message currently in the queue, with all message attributes."""
    received: list[MessageTypeDef] = []
    while True:
        batch = client.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
            VisibilityTimeout=300,
        ).get("Messages", [])
        if not batch:
            return received
        received.extend(batch)


def sent_attributes(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A Lambda record's messageAttributes in the shape ReceiveMessage returns them."""
    converted: dict[str, dict[str, Any]] = {}
    for name, value in record["messageAttributes"].items():
        if value.get("stringValue") is not None:
            converted[name] = {"DataType": value["dataType"], "StringValue": value["stringValue"]}
        else:
            converted[name] = {
                "DataType": value["dataType"],
                "BinaryValue": base64.b64decode(value["binaryValue"]),
            }
    return converted
