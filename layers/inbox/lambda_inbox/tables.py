"""The inbox table's shape, for local stacks and tests (production tables come from template.yaml).

Partition key `pk` only; a sparse GSI `open-records` (`gsi_open_pk`, `gsi_open_sk`) that holds
only FAILED / IN_PROGRESS records; TTL on `expires_at`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from .store import OPEN_RECORDS_INDEX

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TTL_ATTRIBUTE = "expires_at"


def create_inbox_table(client: DynamoDBClient, name: str) -> None:
    """Create an on-demand inbox table, wait until it is active and enable TTL."""
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
