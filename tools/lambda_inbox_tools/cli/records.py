"""Reading the inbox for the command line: open records, counts per consumer, durations.

Everything reads the sparse `open-records` index (every shard, see `lambda_inbox.store`), never
the table itself: the index holds only FAILED and IN_PROGRESS records.
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lambda_inbox.store import (
    OPEN_INDEX_PK,
    OPEN_INDEX_SHARDS,
    OPEN_INDEX_SK,
    OPEN_RECORDS_INDEX,
    InboxRecord,
    Status,
    open_index_pk,
    open_records,
    utc_iso,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_duration(text: str) -> float:
    """Seconds in `30m`, `2h`, `7d`, `1w`, `90s` or a sum like `1h30m`; ValueError otherwise."""
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(compact)
    if not compact or "".join(number + unit for number, unit in parts) != compact:
        raise ValueError(f"invalid duration {text!r}: use a number and a unit, e.g. 30m, 2h, 7d")
    seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
    if seconds <= 0:
        raise ValueError(f"invalid duration {text!r}: it must be longer than zero")
    return seconds


def needs_attention(record: InboxRecord, now: float) -> bool:
    """FAILED, or IN_PROGRESS with an expired lease (a live lease is work under way)."""
    if record.status is Status.FAILED:
        return True
    return record.status is Status.IN_PROGRESS and lease_expired(record, now)


def lease_expired(record: InboxRecord, now: float) -> bool:
    if record.lease_expires_at is not None:
        return record.lease_expires_at <= now
    return (record.open_since or "") <= utc_iso(now)


def attention_records(
    client: DynamoDBClient,
    table: str,
    *,
    now: float,
    consumer: str | None = None,
    since_seconds: float | None = None,
) -> Iterator[InboxRecord]:
    """FAILED records and expired leases, newest first (by `open_since`), lazily.

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
    return (record for record in merged if needs_attention(record, now))


def take(records: Iterator[InboxRecord], limit: int) -> tuple[list[InboxRecord], bool]:
    """The first `limit` records and whether there were more."""
    taken = list(itertools.islice(records, limit + 1))
    return taken[:limit], len(taken) > limit


@dataclass
class ConsumerCounts:
    failed: int = 0
    in_progress: int = 0
    lease_expired: int = 0

    def document(self) -> dict[str, int]:
        return {
            "FAILED": self.failed,
            "IN_PROGRESS": self.in_progress,
            "lease_expired": self.lease_expired,
        }


@dataclass
class OpenSummary:
    """Open records by consumer, and the oldest that needs attention."""

    consumers: dict[str, ConsumerCounts] = field(default_factory=dict)
    oldest: InboxRecord | None = None

    @property
    def total(self) -> ConsumerCounts:
        total = ConsumerCounts()
        for counts in self.consumers.values():
            total.failed += counts.failed
            total.in_progress += counts.in_progress
            total.lease_expired += counts.lease_expired
        return total


#: What `summarize_open` reads of each record (not the payload snapshot).
_SUMMARY_ATTRIBUTES = (
    "pk",
    "consumer",
    "message_key",
    "status",
    "lease_expires_at",
    "error_code",
    OPEN_INDEX_SK,
)


def summarize_open(
    client: DynamoDBClient, table: str, *, now: float, consumer: str | None = None
) -> OpenSummary:
    """Count the open records of every shard of the index, reading only a few attributes."""
    summary = OpenSummary()
    for status in (Status.FAILED, Status.IN_PROGRESS):
        for shard in range(OPEN_INDEX_SHARDS):
            for item in _query_projected(client, table, open_index_pk(status, shard), consumer):
                record = InboxRecord.from_item(item)
                counts = summary.consumers.setdefault(record.consumer, ConsumerCounts())
                if record.status is Status.FAILED:
                    counts.failed += 1
                else:
                    counts.in_progress += 1
                    if lease_expired(record, now):
                        counts.lease_expired += 1
                if needs_attention(record, now) and (
                    summary.oldest is None
                    or (record.open_since or "") < (summary.oldest.open_since or "")
                ):
                    summary.oldest = record
    summary.consumers = dict(sorted(summary.consumers.items()))
    return summary


def _query_projected(
    client: DynamoDBClient, table: str, index_pk: str, consumer: str | None
) -> Iterator[dict[str, Any]]:
    names = {f"#a{index}": name for index, name in enumerate(_SUMMARY_ATTRIBUTES)}
    names["#ipk"] = OPEN_INDEX_PK
    request: dict[str, Any] = {
        "TableName": table,
        "IndexName": OPEN_RECORDS_INDEX,
        "KeyConditionExpression": "#ipk = :pk",
        "ProjectionExpression": ", ".join(
            f"#a{index}" for index in range(len(_SUMMARY_ATTRIBUTES))
        ),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {":pk": {"S": index_pk}},
    }
    if consumer is not None:
        names["#consumer"] = "consumer"
        request["FilterExpression"] = "#consumer = :consumer"
        request["ExpressionAttributeValues"][":consumer"] = {"S": consumer}
    while True:
        response = client.query(**request)
        yield from response.get("Items", [])
        last = response.get("LastEvaluatedKey")
        if not last:
            return
        request["ExclusiveStartKey"] = last


def approximate_item_count(client: DynamoDBClient, table: str) -> int:
    """DescribeTable's ItemCount: approximate, refreshed by DynamoDB about every six hours."""
    return int(client.describe_table(TableName=table)["Table"].get("ItemCount", 0))
