"""Small helpers of the leased-mode and reaper tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.integration.order_events.support import plain

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

    from tests.support.tables import LocalTables


def drain(sqs: SQSClient, queue_url: str) -> list[MessageTypeDef]:
    """Every message in a queue, with its attributes (deleted once received)."""
    messages: list[MessageTypeDef] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            VisibilityTimeout=300,
            WaitTimeSeconds=0,
        ).get("Messages", [])
        if not batch:
            return messages
        messages.extend(batch)
        sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(batch)
            ],
        )


def attribute(message: MessageTypeDef, name: str) -> str:
    return str(message.get("MessageAttributes", {})[name]["StringValue"])


def scan(tables: LocalTables, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        response = tables.client.scan(**kwargs)
        items.extend(plain(item) for item in response.get("Items", []))
        if "LastEvaluatedKey" not in response:
            return items
        kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]
