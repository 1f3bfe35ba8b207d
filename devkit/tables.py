"""Create the project's DynamoDB tables on a local endpoint (DynamoDB Local or moto).

The shapes match template.yaml: the inbox table has only a partition key `pk`, a sparse GSI
`open-records` over open records, and TTL on `expires_at`; the domain table has `pk`/`sk`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from lambda_inbox import store as lambda_inbox_store

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import WriteRequestTypeDef

OPEN_RECORDS_INDEX = lambda_inbox_store.OPEN_RECORDS_INDEX
TTL_ATTRIBUTE = lambda_inbox_store.TTL_ATTRIBUTE


@dataclass(frozen=True)
class LocalTables:
    """Tables created for one test on DynamoDB Local."""

    endpoint: str
    inbox: str
    domain: str
    client: DynamoDBClient  # bound to `endpoint`


def _wait_active(client: DynamoDBClient, name: str) -> None:
    client.get_waiter("table_exists").wait(
        TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )


def create_inbox_table(client: DynamoDBClient, name: str) -> None:
    """Create the inbox table exactly as the library defines it (`store.create_inbox_table`)."""
    lambda_inbox_store.create_inbox_table(client, name)


def create_domain_table(client: DynamoDBClient, name: str, *, stream: bool = False) -> None:
    """Create the domain table shared by the example consumers (pk S, sk S); with `stream`, its
    stream (`NEW_IMAGE`, as template.yaml's, which feeds the outbox relay)."""
    extra: dict[str, Any] = {}
    if stream:
        extra["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    client.create_table(
        **extra,
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
    )
    _wait_active(client, name)


def seed_stock(client: DynamoDBClient, table: str, stock: Mapping[str, int]) -> None:
    """Put a `SKU#{sku}` / `STOCK` item per SKU: `available` = the given amount, `reserved` = 0
    (the example app's stock items), 25 per BatchWriteItem, unprocessed items sent again."""
    puts: list[WriteRequestTypeDef] = [
        {
            "PutRequest": {
                "Item": {
                    "pk": {"S": f"SKU#{sku}"},
                    "sk": {"S": "STOCK"},
                    "available": {"N": str(amount)},
                    "reserved": {"N": "0"},
                }
            }
        }
        for sku, amount in stock.items()
    ]
    for start in range(0, len(puts), 25):
        pending: Mapping[str, Any] = {table: puts[start : start + 25]}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems", {})


def delete_table(client: DynamoDBClient, name: str) -> None:
    """Delete a table, ignoring one that is already gone."""
    try:
        client.delete_table(TableName=name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
