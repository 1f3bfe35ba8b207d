"""The inbox record: its attributes, its key and the layout of the open-records index.

Key contract: partition key `pk = "{consumer}#{message_key}"`, TTL attribute `expires_at`. Open
records (`FAILED`, `IN_PROGRESS`) also carry the keys of the sparse `open-records` index, so the
index holds only work that needs attention. Its partition key is sharded, `"{status}#{shard}"`
with the shard taken from a hash of `pk`, so a poison storm spreads over `OPEN_INDEX_SHARDS`
index partitions instead of heating one; readers query every shard. Its sort key is the time the
record needs attention from (failure time, lease expiry). Reads treat `expires_at < now` as
absent: TTL deletion lags by up to days.
"""

# Annotations are evaluated at import (no `from __future__ import annotations`): a NamedTuple
# compiles each string annotation into a ForwardRef, which costs more at cold start.
import time
import zlib
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from functools import lru_cache
from typing import Any, NamedTuple

PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"
OPEN_RECORDS_INDEX = "open-records"
OPEN_INDEX_PK = "gsi_open_pk"
OPEN_INDEX_SK = "gsi_open_sk"
#: Index partitions an open status is spread over (each takes 1,000 WCU/s).
OPEN_INDEX_SHARDS = 16


class Status(StrEnum):
    COMPLETED = "COMPLETED"
    IN_PROGRESS = "IN_PROGRESS"
    FAILED = "FAILED"

    @property
    def is_open(self) -> bool:
        return self is not Status.COMPLETED


def record_pk(consumer: str, message_key: str) -> str:
    """The partition key of a consumer's record of a message (the table's key contract)."""
    return f"{consumer}#{message_key}"


def open_index_pk(status: Status, shard: int) -> str:
    return f"{status.value}#{shard:02d}"


def open_index_shard(pk: str) -> int:
    """Stable shard of a record: a rewrite of the same record lands in the same shard."""
    return zlib.crc32(pk.encode("utf-8")) % OPEN_INDEX_SHARDS


@lru_cache(maxsize=8)  # the records of one transaction share one time
def utc_iso(epoch: float) -> str:
    """The stored time format (`completed_at`, `failed_at`, `open_since`): ISO 8601 in UTC."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def epoch_of(iso: str | None) -> float | None:
    """A stored time (`utc_iso`) read back as epoch seconds; None when absent or unreadable."""
    if not iso:
        return None
    try:
        parsed = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def claims_lease(item: Mapping[str, Any]) -> bool:
    """Whether an item written to the inbox table is a lease claim (an IN_PROGRESS record)."""
    return item.get("status") == {"S": Status.IN_PROGRESS.value}


class InboxRecord(NamedTuple):
    """One inbox record, whatever its status; `from_item` / `to_item` map it both ways."""

    consumer: str
    message_key: str
    status: Status
    fingerprint: str | None = None
    expires_at: int | None = None
    source: str | None = None
    delivery_id: str | None = None
    completed_at: str | None = None
    failed_at: str | None = None
    attempts: int = 0
    lease_expires_at: float | None = None
    owner: str | None = None
    error_code: str | None = None
    last_error: str | None = None
    result: str | None = None
    payload_snapshot: bytes | None = None
    payload_truncated: bool = False
    dead_lettered_at: str | None = None
    #: When the record became open work (sort key of the open-records index).
    open_since: str | None = None

    @property
    def pk(self) -> str:
        return record_pk(self.consumer, self.message_key)

    def is_live(self, now: float) -> bool:
        return self.expires_at is None or self.expires_at >= int(now)

    def lease_expired(self, now: float, grace: float = 0.0) -> bool:
        """Whether the lease is over at `now` (`grace` seconds after its expiry): a lease is
        still held at the instant it expires, like a record at its `expires_at`. A record
        without a lease has none to hold."""
        return (self.lease_expires_at or 0.0) + grace < now

    def needs_attention(self, now: float) -> bool:
        """FAILED, or IN_PROGRESS with an expired lease (a live lease is work under way)."""
        if self.status is Status.FAILED:
            return True
        return self.status is Status.IN_PROGRESS and self.lease_expired(now)

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> "InboxRecord":
        def text(name: str) -> str | None:
            value = item.get(name, {})
            return str(value["S"]) if "S" in value else None

        def number(name: str) -> float | None:
            value = item.get(name, {})
            return float(value["N"]) if "N" in value else None

        pk = text(PARTITION_KEY) or ""
        consumer, _, key_from_pk = pk.partition("#")
        expires = number(TTL_ATTRIBUTE)
        snapshot = item.get("payload_snapshot", {}).get("B")
        return cls(
            consumer=text("consumer") or consumer,
            message_key=text("message_key") or key_from_pk,
            status=Status(text("status") or Status.COMPLETED.value),
            fingerprint=text("fingerprint"),
            expires_at=int(expires) if expires is not None else None,
            source=text("source"),
            delivery_id=text("delivery_id"),
            completed_at=text("completed_at"),
            failed_at=text("failed_at"),
            attempts=int(number("attempts") or 0),
            lease_expires_at=number("lease_expires_at"),
            owner=text("owner"),
            error_code=text("error_code"),
            last_error=text("last_error"),
            result=text("result"),
            payload_snapshot=bytes(snapshot) if snapshot is not None else None,
            payload_truncated=bool(item.get("payload_truncated", {}).get("BOOL", False)),
            dead_lettered_at=text("dead_lettered_at"),
            open_since=text(OPEN_INDEX_SK),
        )

    def to_item(self) -> dict[str, Any]:
        """The DynamoDB item; open records get the index keys, completed ones none (sparse)."""
        item: dict[str, Any] = {
            PARTITION_KEY: {"S": self.pk},
            "consumer": {"S": self.consumer},
            "message_key": {"S": self.message_key},
            "status": {"S": self.status.value},
        }
        strings = {
            "fingerprint": self.fingerprint,
            "source": self.source,
            "delivery_id": self.delivery_id,
            "completed_at": self.completed_at,
            "failed_at": self.failed_at,
            "owner": self.owner,
            "error_code": self.error_code,
            "last_error": self.last_error,
            "result": self.result,
            "dead_lettered_at": self.dead_lettered_at,
        }
        item.update({name: {"S": value} for name, value in strings.items() if value})
        if self.expires_at is not None:
            item[TTL_ATTRIBUTE] = {"N": str(self.expires_at)}
        if self.attempts:
            item["attempts"] = {"N": str(self.attempts)}
        if self.lease_expires_at is not None:
            item["lease_expires_at"] = {"N": f"{self.lease_expires_at:.3f}"}
        if self.payload_snapshot is not None:
            item["payload_snapshot"] = (
                {"B": self.payload_snapshot} if self.payload_snapshot else {"NULL": True}
            )
            item["payload_truncated"] = {"BOOL": self.payload_truncated}
        if self.status.is_open:
            item[OPEN_INDEX_PK] = {"S": open_index_pk(self.status, open_index_shard(self.pk))}
            item[OPEN_INDEX_SK] = {"S": self.open_since or utc_iso(time.time())}
        return item
