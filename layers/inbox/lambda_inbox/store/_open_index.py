"""The inbox table's shape (`create_inbox_table`, for local stacks and tests; production tables
come from template.yaml), and reads of its sparse open-records index: every shard of the open
statuses, merged by the time each record became open work. Never a scan."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from lambda_inbox.store._record import (
    OPEN_INDEX_PK,
    OPEN_INDEX_SHARDS,
    OPEN_INDEX_SK,
    OPEN_RECORDS_INDEX,
    PARTITION_KEY,
    TTL_ATTRIBUTE,
    InboxRecord,
    Status,
    open_index_pk,
    utc_iso,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: What a read with `payload=False` takes of each record: enough to count and to tell what needs
#: attention, not the payload snapshot, the result or the error text.
_SUMMARY_ATTRIBUTES = (
    PARTITION_KEY,
    "consumer",
    "message_key",
    "status",
    "lease_expires_at",
    "error_code",
    OPEN_INDEX_SK,
)


def open_records(
    client: DynamoDBClient,
    table: str,
    *,
    statuses: Iterable[Status] = (Status.FAILED, Status.IN_PROGRESS),
    consumer: str | None = None,
    since: str | None = None,
    until: str | None = None,
    newest_first: bool = True,
    payload: bool = True,
) -> Iterator[InboxRecord]:
    """Open records from the sparse index, every shard queried, merged by `open_since`.

    `since` / `until` bound the sort key (ISO times). Lazily paginated: take what you need.
    `payload=False` reads only the key, status, lease expiry, error code and `open_since` of
    each record (for counting).
    """
    streams = [
        open_records_of_shard(
            client,
            table,
            status,
            shard,
            consumer=consumer,
            since=since,
            until=until,
            newest_first=newest_first,
            payload=payload,
        )
        for status in statuses
        for shard in range(OPEN_INDEX_SHARDS)
    ]
    merged = heapq.merge(*streams, key=lambda record: record.open_since or "", reverse=newest_first)
    yield from merged


def open_records_of_shard(
    client: DynamoDBClient,
    table: str,
    status: Status,
    shard: int,
    *,
    consumer: str | None = None,
    since: str | None = None,
    until: str | None = None,
    newest_first: bool = True,
    page_size: int | None = None,
    payload: bool = True,
) -> Iterator[InboxRecord]:
    """The open records of one index shard, lazily paginated (`page_size` items a query)."""
    condition = "#pk = :pk"
    names = {"#pk": OPEN_INDEX_PK}
    values: dict[str, Any] = {":pk": {"S": open_index_pk(status, shard)}}
    if since is not None:
        values[":since"] = {"S": since}
    if until is not None:
        values[":until"] = {"S": until}
    if since is not None and until is not None:
        condition += " AND #sk BETWEEN :since AND :until"
    elif since is not None:
        condition += " AND #sk >= :since"
    elif until is not None:
        condition += " AND #sk <= :until"
    if since is not None or until is not None:
        names["#sk"] = OPEN_INDEX_SK
    request: dict[str, Any] = {
        "TableName": table,
        "IndexName": OPEN_RECORDS_INDEX,
        "KeyConditionExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ScanIndexForward": not newest_first,
    }
    if consumer is not None:
        names["#consumer"] = "consumer"
        values[":consumer"] = {"S": consumer}
        request["FilterExpression"] = "#consumer = :consumer"
    if not payload:
        projected = {f"#a{index}": name for index, name in enumerate(_SUMMARY_ATTRIBUTES)}
        names.update(projected)
        request["ProjectionExpression"] = ", ".join(projected)
    if page_size is not None:
        request["Limit"] = page_size
    while True:
        response = client.query(**request)
        for item in response.get("Items", []):
            yield InboxRecord.from_item(item)
        last = response.get("LastEvaluatedKey")
        if not last:
            return
        request["ExclusiveStartKey"] = last


def attention_records(
    client: DynamoDBClient,
    table: str,
    *,
    now: float,
    consumer: str | None = None,
    since_seconds: float | None = None,
) -> Iterator[InboxRecord]:
    """FAILED records and expired leases (`InboxRecord.needs_attention`), newest first (by
    `open_since`), lazily.

    IN_PROGRESS records are open from their lease expiry, so the index bounds them to `now`;
    FAILED records are not bounded above, a writer's clock may run ahead of this one.
    """
    since = utc_iso(now - since_seconds) if since_seconds is not None else None
    failed = open_records(client, table, statuses=(Status.FAILED,), consumer=consumer, since=since)
    expired = open_records(
        client,
        table,
        statuses=(Status.IN_PROGRESS,),
        consumer=consumer,
        since=since,
        until=utc_iso(now),
    )
    merged = heapq.merge(failed, expired, key=lambda record: record.open_since or "", reverse=True)
    return (record for record in merged if record.needs_attention(now))


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
