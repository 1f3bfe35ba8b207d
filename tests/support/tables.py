"""Create the project's DynamoDB tables on a test endpoint (DynamoDB Local or moto).

The shapes match template.yaml: the inbox table has only a partition key `pk`, a sparse GSI
`open-records` over open records, and TTL on `expires_at`; the domain table has `pk`/`sk`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

OPEN_RECORDS_INDEX = "open-records"
TTL_ATTRIBUTE = "expires_at"


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
    """Create the inbox table (pk only, sparse GSI `open-records`, TTL on `expires_at`)."""
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "gsi_open_pk", "AttributeType": "S"},
            {"AttributeName": "gsi_open_sk", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": OPEN_RECORDS_INDEX,
                "KeySchema": [
                    {"AttributeName": "gsi_open_pk", "KeyType": "HASH"},
                    {"AttributeName": "gsi_open_sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    _wait_active(client, name)
    try:
        client.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
        )
    except ClientError as exc:  # an endpoint without TTL support; reads treat expiry themselves
        code = exc.response.get("Error", {}).get("Code", "")
        if code not in {"UnknownOperationException", "NotImplementedException"}:
            raise


def create_domain_table(client: DynamoDBClient, name: str) -> None:
    """Create the domain table shared by the example consumers (pk S, sk S)."""
    client.create_table(
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


def delete_table(client: DynamoDBClient, name: str) -> None:
    """Delete a table, ignoring one that is already gone."""
    try:
        client.delete_table(TableName=name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
