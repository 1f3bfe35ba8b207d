"""Reading the inbox for the command line: open records, counts per consumer, durations.

Everything reads the sparse `open-records` index (every shard, see `lambda_inbox.store`), never
the table itself: the index holds only FAILED and IN_PROGRESS records.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lambda_inbox.store import InboxRecord, Status, open_records

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


def summarize_open(
    client: DynamoDBClient, table: str, *, now: float, consumer: str | None = None
) -> OpenSummary:
    """Count the open records of every shard of the index, reading only a few attributes."""
    summary = OpenSummary()
    for record in open_records(client, table, consumer=consumer, payload=False):
        counts = summary.consumers.setdefault(record.consumer, ConsumerCounts())
        if record.status is Status.FAILED:
            counts.failed += 1
        else:
            counts.in_progress += 1
            if record.lease_expired(now):
                counts.lease_expired += 1
        if record.needs_attention(now) and (
            summary.oldest is None or (record.open_since or "") < (summary.oldest.open_since or "")
        ):
            summary.oldest = record
    summary.consumers = dict(sorted(summary.consumers.items()))
    return summary


def approximate_item_count(client: DynamoDBClient, table: str) -> int:
    """DescribeTable's ItemCount: approximate, refreshed by DynamoDB about every six hours."""
    return int(client.describe_table(TableName=table)["Table"].get("ItemCount", 0))
