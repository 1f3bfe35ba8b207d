"""Helpers of the order-events integration tests: event builders and `OrderEventsEnv`.

`OrderEventsEnv` (built by the `order_env` fixture) loads fresh handler modules, seeds stock and
reads stock, domain items, inbox records and dead-lettered messages. `sqs_record` / `sqs_event`
build Lambda SQS events.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from boto3.dynamodb.types import TypeDeserializer

from devkit.handlers import load_function
from devkit.tables import LocalTables, seed_stock

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:lambda-inbox-OrderEventsQueue"
CONSUMER = "order-events"

_deserializer = TypeDeserializer()


def plain(item: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB item as Python values (numbers as int where integral)."""

    def convert(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        if isinstance(value, list):
            return [convert(v) for v in value]
        if hasattr(value, "as_integer_ratio") and not isinstance(value, (bool, int)):
            integral = int(value)
            return integral if integral == value else value
        return value

    return {name: convert(_deserializer.deserialize(raw)) for name, raw in item.items()}


def order(
    event_id: str,
    order_id: str,
    lines: Mapping[str, int] | Sequence[tuple[str, int]],
    *,
    customer_id: str = "cust-001",
    total_cents: int = 1000,
) -> dict[str, Any]:
    """An OrderPlaced payload."""
    pairs = list(lines.items()) if isinstance(lines, Mapping) else list(lines)
    return {
        "event_id": event_id,
        "order_id": order_id,
        "customer_id": customer_id,
        "lines": [{"sku": sku, "qty": qty} for sku, qty in pairs],
        "total_cents": total_cents,
    }


def sqs_record(
    body: str | Mapping[str, Any],
    *,
    message_id: str | None = None,
    receive_count: int = 1,
    message_attributes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One record of a Lambda SQS event (standard queue)."""
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": base64.b64encode(uuid.uuid4().bytes).decode("ascii"),
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": "1732190520010",
            "SenderId": "AIDAEXAMPLEPRODUCER01",
            "ApproximateFirstReceiveTimestamp": "1732190520047",
        },
        "messageAttributes": dict(message_attributes or {}),
        "md5OfBody": hashlib.md5(text.encode("utf-8")).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": "us-east-1",
    }


def sqs_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A Lambda SQS event holding `records` (each built by `sqs_record`)."""
    return {"Records": [dict(record) for record in records]}


def redeliver(record: Mapping[str, Any]) -> dict[str, Any]:
    """The same SQS message delivered again: same messageId, new receipt handle, count + 1."""
    again: dict[str, Any] = json.loads(json.dumps(record))
    again["receiptHandle"] = base64.b64encode(uuid.uuid4().bytes).decode("ascii")
    count = int(again["attributes"]["ApproximateReceiveCount"]) + 1
    again["attributes"]["ApproximateReceiveCount"] = str(count)
    return again


def failed_ids(response: Mapping[str, Any]) -> list[str]:
    return [str(item["itemIdentifier"]) for item in response["batchItemFailures"]]


@dataclass
class OrderEventsEnv:
    """The environment of one test: tables on DynamoDB Local, a DLQ on the moto server."""

    tables: LocalTables
    dlq_url: str
    sqs: SQSClient
    monkeypatch: pytest.MonkeyPatch

    def load(self) -> ModuleType:
        """A fresh `functions/order_events/app.py` module (new consumer, new clients)."""
        return load_function("order_events")

    # ---- domain table ------------------------------------------------------------------

    def seed_stock(self, stock: Mapping[str, int]) -> None:
        """Put `SKU#{sku}/STOCK` items with `available` = the given amount, `reserved` = 0."""
        seed_stock(self.tables.client, self.tables.domain, stock)

    def stock(self, sku: str) -> tuple[int, int] | None:
        """(available, reserved) of a SKU, None if it has no stock item."""
        item = self.get(f"SKU#{sku}", "STOCK")
        if item is None:
            return None
        return int(item["available"]), int(item.get("reserved", 0))

    def get(self, pk: str, sk: str) -> dict[str, Any] | None:
        response = self.tables.client.get_item(
            TableName=self.tables.domain,
            Key={"pk": {"S": pk}, "sk": {"S": sk}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return plain(item) if item else None

    def scan(self, table: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        while True:
            response = self.tables.client.scan(**kwargs)
            items.extend(plain(item) for item in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return items
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def domain_items(self) -> list[dict[str, Any]]:
        return self.scan(self.tables.domain)

    def order_records(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Every ORDER# item, by (order_id, "SHIPMENT" | "REJECTION")."""
        return {
            (item["pk"].removeprefix("ORDER#"), item["sk"]): item
            for item in self.domain_items()
            if item["pk"].startswith("ORDER#")
        }

    # ---- inbox table -------------------------------------------------------------------

    def inbox(self) -> dict[str, dict[str, Any]]:
        """Inbox records by message key (all of them belong to the consumer `order-events`)."""
        records = {}
        for item in self.scan(self.tables.inbox):
            assert item["pk"] == f"{CONSUMER}#{item['message_key']}"
            records[item["message_key"]] = item
        return records

    # ---- dead-letter queue -------------------------------------------------------------

    def dlq_messages(self) -> list[MessageTypeDef]:
        """Drain the DLQ: every message in it, with all attributes (deleted once received)."""
        messages: list[MessageTypeDef] = []
        while True:
            batch = self.sqs.receive_message(
                QueueUrl=self.dlq_url,
                MaxNumberOfMessages=10,
                MessageAttributeNames=["All"],
                AttributeNames=["All"],
                VisibilityTimeout=300,
                WaitTimeSeconds=0,
            ).get("Messages", [])
            if not batch:
                return messages
            messages.extend(batch)
            self.sqs.delete_message_batch(
                QueueUrl=self.dlq_url,
                Entries=[
                    {"Id": str(n), "ReceiptHandle": message["ReceiptHandle"]}
                    for n, message in enumerate(batch)
                ],
            )

    def assert_dlq_empty(self) -> None:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.dlq_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        assert attributes["ApproximateNumberOfMessages"] == "0"
        assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
        assert self.dlq_messages() == []


def sqs_client(endpoint: str) -> SQSClient:
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


# ---- botocore hooks on the consumer's own DynamoDB client (below the code under test) ----------

TRANSACT_OPERATION = "dynamodb.TransactWriteItems"


class TransactCalls:
    """Records the parameters of every `TransactWriteItems` call a client makes.

    Registered on `before-parameter-build`, so it sees one entry per call of the client method
    (botocore's own HTTP retries of that call are not separate entries; see `FaultInjector.sends`).
    """

    def __init__(self, client: Any) -> None:
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        client.meta.events.register(f"before-parameter-build.{TRANSACT_OPERATION}", self._record)

    def _record(self, params: Mapping[str, Any], **_: Any) -> None:
        with self._lock:
            self.calls.append(copy.deepcopy(dict(params)))

    @property
    def tokens(self) -> list[str]:
        return [str(call["ClientRequestToken"]) for call in self.calls]

    @property
    def sizes(self) -> list[int]:
        return [len(call["TransactItems"]) for call in self.calls]
