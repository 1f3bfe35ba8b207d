"""payment-events on DynamoDB Local (tables per test) with a fresh SQS dead-letter queue on moto."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from devkit.handlers import load_function
from devkit.tables import LocalTables

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


@dataclass
class PaymentsStack:
    tables: LocalTables
    sqs: SQSClient
    dlq_url: str

    def load(self) -> ModuleType:
        """A fresh payment-events module: its own clients, like another Lambda container."""
        return load_function("payment_events")

    def balance(self, customer: str) -> tuple[int, int]:
        item = self.tables.client.get_item(
            TableName=self.tables.domain,
            Key={"pk": {"S": f"CUSTOMER#{customer}"}, "sk": {"S": "BALANCE"}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return (0, 0)
        return int(item["balance_cents"]["N"]), int(item["payments"]["N"])

    def scan(self, table: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        while True:
            page = self.tables.client.scan(**kwargs)
            items.extend(page["Items"])
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def payment_items(self) -> dict[str, dict[str, Any]]:
        """PAYMENT# items by payment id."""
        return {
            item["sk"]["S"].removeprefix("PAYMENT#"): item
            for item in self.scan(self.tables.domain)
            if item["sk"]["S"].startswith("PAYMENT#")
        }

    def inbox_statuses(self) -> dict[str, str]:
        return {
            item["message_key"]["S"]: item["status"]["S"] for item in self.scan(self.tables.inbox)
        }

    def dead_letter_count(self) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])


@pytest.fixture
def stack(
    local_tables: LocalTables, moto_server_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[PaymentsStack]:
    sqs = boto3.client("sqs", endpoint_url=moto_server_endpoint, region_name="us-east-1")
    dlq_url = sqs.create_queue(QueueName=f"payment-events-dlq-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    monkeypatch.setenv("INBOX_TABLE", local_tables.inbox)
    monkeypatch.setenv("DOMAIN_TABLE", local_tables.domain)
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", dlq_url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", local_tables.endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", moto_server_endpoint)
    try:
        yield PaymentsStack(local_tables, sqs, dlq_url)
    finally:
        sqs.delete_queue(QueueUrl=dlq_url)
