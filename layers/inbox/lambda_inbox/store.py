"""The inbox table: the record, its key and index layout, and every read and write of it.

This module is the only place that knows attribute names. Key contract: partition key
`pk = "{consumer}#{message_key}"`, TTL attribute `expires_at`. Open records (`FAILED`,
`IN_PROGRESS`) also carry the keys of the sparse `open-records` index, so the index holds only
work that needs attention. Its partition key is sharded, `"{status}#{shard}"` with the shard
taken from a hash of `pk`, so a poison storm spreads over `OPEN_INDEX_SHARDS` index partitions
instead of heating one; readers query every shard. Its sort key is the time the record needs
attention from (failure time, lease expiry). Reads treat `expires_at < now` as absent: TTL
deletion lags by up to days.
"""

from __future__ import annotations

import heapq
import json
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .config import InboxConfig
    from .messages import InboundMessage

PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"
OPEN_RECORDS_INDEX = "open-records"
OPEN_INDEX_PK = "gsi_open_pk"
OPEN_INDEX_SK = "gsi_open_sk"
#: Index partitions an open status is spread over (each takes 1,000 WCU/s).
OPEN_INDEX_SHARDS = 16
BATCH_GET_LIMIT = 100
_BATCH_GET_ROUNDS = 8
#: What the duplicate filter reads of each record.
_FILTER_ATTRIBUTES = ("message_key", "status", "fingerprint", TTL_ATTRIBUTE)


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


def utc_iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class InboxRecord:
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

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> InboxRecord:
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


class InboxStore:
    """Reads and writes the inbox records of one consumer."""

    def __init__(
        self,
        client: DynamoDBClient,
        *,
        table: str,
        consumer: str,
        retention_seconds: float,
        snapshot_bytes: int = 8 * 1024,
    ) -> None:
        self._client = client
        self.table = table
        self.consumer = consumer
        self._retention = retention_seconds
        self._snapshot_bytes = snapshot_bytes

    @classmethod
    def from_config(cls, client: DynamoDBClient, config: InboxConfig) -> InboxStore:
        return cls(
            client,
            table=config.inbox_table,
            consumer=config.consumer,
            retention_seconds=config.retention.total_seconds(),
            snapshot_bytes=config.failed_payload_snapshot_bytes,
        )

    def pk(self, message_key: str) -> str:
        return record_pk(self.consumer, message_key)

    def item_identity(self, message_key: str) -> str:
        """Names the inbox item the way the planner names items (one action per item)."""
        return f"{self.table}|{self.pk(message_key)}"

    def fetch(self, message_keys: Iterable[str], *, now: float) -> dict[str, InboxRecord]:
        """Live records by message key: one eventually consistent `BatchGetItem` per 100 keys.

        Missing, expired and unprocessed-after-retries keys are simply absent: the conditional put
        at commit time is the real guard, this read only makes duplicates cheap.
        """
        pending = [{PARTITION_KEY: {"S": self.pk(key)}} for key in dict.fromkeys(message_keys)]
        names = {f"#a{index}": name for index, name in enumerate(_FILTER_ATTRIBUTES)}
        records: dict[str, InboxRecord] = {}
        for start in range(0, len(pending), BATCH_GET_LIMIT):
            request: dict[str, Any] = {
                self.table: {
                    "Keys": pending[start : start + BATCH_GET_LIMIT],
                    "ProjectionExpression": ", ".join([PARTITION_KEY, *names]),
                    "ExpressionAttributeNames": names,
                }
            }
            for round_number in range(_BATCH_GET_ROUNDS):
                response = self._client.batch_get_item(RequestItems=request)
                for item in response.get("Responses", {}).get(self.table, []):
                    record = InboxRecord.from_item(item)
                    if record.is_live(now):
                        records[record.message_key] = record
                request = dict(response.get("UnprocessedKeys") or {})
                if not request:
                    break
                time.sleep(min(0.05 * 2**round_number, 1.0))
        return records

    def completion_put(
        self,
        message: InboundMessage,
        message_key: str,
        fingerprint: str,
        result: Mapping[str, Any],
        *,
        now: float,
        lease_owner: str | None = None,
    ) -> dict[str, Any]:
        """The inbox `Put` of a transaction: succeeds only if no live, completed record exists.

        A FAILED record is claimable, so a message replayed after a fix is processed again.
        Leased mode (`lease_owner` given): succeeds only while the record is still this owner's
        IN_PROGRESS lease.
        """
        record = InboxRecord(
            consumer=self.consumer,
            message_key=message_key,
            status=Status.COMPLETED,
            fingerprint=fingerprint,
            source=message.source,
            completed_at=utc_iso(now),
            expires_at=int(now + self._retention),
            result=json.dumps(result, sort_keys=True, default=str) if result else None,
        )
        if lease_owner is not None:
            return {
                "Put": {
                    "TableName": self.table,
                    "Item": record.to_item(),
                    "ConditionExpression": "#status = :in_progress AND #owner = :owner",
                    "ExpressionAttributeNames": {"#status": "status", "#owner": "owner"},
                    "ExpressionAttributeValues": {
                        ":in_progress": {"S": Status.IN_PROGRESS.value},
                        ":owner": {"S": lease_owner},
                    },
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        return {
            "Put": {
                "TableName": self.table,
                "Item": record.to_item(),
                "ConditionExpression": (
                    f"attribute_not_exists({PARTITION_KEY}) OR {TTL_ATTRIBUTE} < :now "
                    "OR #status = :failed"
                ),
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":now": {"N": str(int(now))},
                    ":failed": {"S": Status.FAILED.value},
                },
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def mark_failed(
        self,
        message: InboundMessage,
        message_key: str,
        fingerprint: str,
        *,
        error_code: str,
        error: str,
        now: float,
        dead_lettered: bool = True,
    ) -> bool:
        """Record a message as FAILED (no TTL: an incident artifact, kept until resolved).

        Never overwrites a live COMPLETED record; returns False when one exists.
        """
        body = message.body
        snapshot = body[: self._snapshot_bytes]
        record = InboxRecord(
            consumer=self.consumer,
            message_key=message_key,
            status=Status.FAILED,
            fingerprint=fingerprint,
            source=message.source,
            delivery_id=message.delivery_id,
            error_code=error_code,
            last_error=error[:1024] or error_code,
            failed_at=utc_iso(now),
            payload_snapshot=snapshot,
            payload_truncated=len(body) > len(snapshot),
            dead_lettered_at=utc_iso(now) if dead_lettered else None,
            open_since=utc_iso(now),
        )
        try:
            self._client.put_item(
                TableName=self.table,
                Item=record.to_item(),
                ConditionExpression=(
                    f"attribute_not_exists({PARTITION_KEY}) OR #status <> :completed "
                    f"OR {TTL_ATTRIBUTE} < :now"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":completed": {"S": Status.COMPLETED.value},
                    ":now": {"N": str(int(now))},
                },
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True


def get_record(
    client: DynamoDBClient, table: str, consumer: str, message_key: str
) -> InboxRecord | None:
    """One record by consumer and key (strongly consistent), expired or not."""
    item = client.get_item(
        TableName=table,
        Key={PARTITION_KEY: {"S": record_pk(consumer, message_key)}},
        ConsistentRead=True,
    ).get("Item")
    return InboxRecord.from_item(item) if item is not None else None


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
