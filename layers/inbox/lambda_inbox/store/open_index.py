"""Reads of the sparse open-records index: every shard of the open statuses, merged by the
time each record became open work. Never a scan."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from lambda_inbox.store.record import (
    OPEN_INDEX_PK,
    OPEN_INDEX_SHARDS,
    OPEN_INDEX_SK,
    OPEN_RECORDS_INDEX,
    InboxRecord,
    Status,
    open_index_pk,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def open_records(
    client: DynamoDBClient,
    table: str,
    *,
    statuses: Iterable[Status] = (Status.FAILED, Status.IN_PROGRESS),
    consumer: str | None = None,
    since: str | None = None,
    until: str | None = None,
    newest_first: bool = True,
) -> Iterator[InboxRecord]:
    """Open records from the sparse index, every shard queried, merged by `open_since`.

    `since` / `until` bound the sort key (ISO times). Lazily paginated: take what you need.
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
