"""The inbox table's shape, for local stacks and tests (production tables come from template.yaml).

Partition key `pk` only; a sparse GSI `open-records` that holds only FAILED / IN_PROGRESS records;
TTL on `expires_at`. Names come from `store`, which owns the record layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from lambda_inbox.store import (
    OPEN_INDEX_PK,
    OPEN_INDEX_SK,
    OPEN_RECORDS_INDEX,
    PARTITION_KEY,
    TTL_ATTRIBUTE,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def create_inbox_table(client: DynamoDBClient, name: str) -> None:
    """Create an on-demand inbox table, wait until it is active and enable TTL."""
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": OPEN_INDEX_PK, "AttributeType": "S"},
            {"AttributeName": OPEN_INDEX_SK, "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": PARTITION_KEY, "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": OPEN_RECORDS_INDEX,
                "KeySchema": [
                    {"AttributeName": OPEN_INDEX_PK, "KeyType": "HASH"},
                    {"AttributeName": OPEN_INDEX_SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    client.get_waiter("table_exists").wait(
        TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    try:
        client.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
        )
    except ClientError as error:  # endpoints without TTL: reads treat expiry themselves
        if error.response.get("Error", {}).get("Code") not in (
            "UnknownOperationException",
            "NotImplementedException",
        ):
            raise
