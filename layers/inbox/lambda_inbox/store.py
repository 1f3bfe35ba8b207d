"""The inbox table: record schema, the dedupe read, the conditional inbox put, FAILED records.

Key contract: partition key `pk = "{consumer}#{message_key}"`, TTL attribute `expires_at`.
Open records (`FAILED`, `IN_PROGRESS`) also carry `gsi_open_pk` / `gsi_open_sk`, so the sparse
`open-records` index holds only work that needs attention. Reads treat `expires_at < now` as
absent: TTL deletion lags by up to days.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from .config import InboxConfig
from .messages import InboundMessage

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

OPEN_RECORDS_INDEX = "open-records"
BATCH_GET_LIMIT = 100
_BATCH_GET_ROUNDS = 8


class Status(StrEnum):
    COMPLETED = "COMPLETED"
    IN_PROGRESS = "IN_PROGRESS"
    FAILED = "FAILED"


@dataclass(frozen=True)
class InboxRecord:
    """The part of a stored record the processing model reads back."""

    message_key: str
    status: Status
    fingerprint: str | None
    expires_at: int | None

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> InboxRecord:
        expires = item.get("expires_at", {}).get("N")
        return cls(
            message_key=item.get("message_key", {}).get("S", ""),
            status=Status(item.get("status", {}).get("S", Status.COMPLETED.value)),
            fingerprint=item.get("fingerprint", {}).get("S"),
            expires_at=int(expires) if expires is not None else None,
        )

    def is_live(self, now: int) -> bool:
        return self.expires_at is None or self.expires_at >= now


def utc_iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


class InboxStore:
    """Reads and writes the inbox records of one consumer."""

    def __init__(self, client: DynamoDBClient, config: InboxConfig) -> None:
        self._client = client
        self._config = config

    @property
    def table(self) -> str:
        return self._config.inbox_table

    def partition_key(self, message_key: str) -> str:
        return f"{self._config.consumer}#{message_key}"

    def fetch(self, message_keys: Iterable[str], *, now: int) -> dict[str, InboxRecord]:
        """Live records by message key: one eventually consistent `BatchGetItem` per 100 keys.

        Missing, expired and unprocessed-after-retries keys are simply absent: the conditional put
        at commit time is the real guard, this read only makes duplicates cheap.
        """
        pending = [{"pk": {"S": self.partition_key(key)}} for key in dict.fromkeys(message_keys)]
        records: dict[str, InboxRecord] = {}
        for start in range(0, len(pending), BATCH_GET_LIMIT):
            request: dict[str, Any] = {
                self.table: {
                    "Keys": pending[start : start + BATCH_GET_LIMIT],
                    "ProjectionExpression": "message_key, #status, fingerprint, expires_at",
                    "ExpressionAttributeNames": {"#status": "status"},
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
    ) -> dict[str, Any]:
        """The inbox `Put` of a transaction: succeeds only if no live, completed record exists.

        A FAILED record is claimable, so a message replayed after a fix is processed again.
        """
        item: dict[str, Any] = {
            "pk": {"S": self.partition_key(message_key)},
            "consumer": {"S": self._config.consumer},
            "message_key": {"S": message_key},
            "status": {"S": Status.COMPLETED.value},
            "fingerprint": {"S": fingerprint},
            "source": {"S": message.source},
            "completed_at": {"S": utc_iso(now)},
            "expires_at": {"N": str(int(now + self._config.retention.total_seconds()))},
        }
        if result:
            item["result"] = {"S": json.dumps(result, sort_keys=True, default=str)}
        return {
            "Put": {
                "TableName": self.table,
                "Item": item,
                "ConditionExpression": (
                    "attribute_not_exists(pk) OR expires_at < :now OR #status = :failed"
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
    ) -> bool:
        """Record a dead-lettered message as FAILED (no TTL: an incident artifact).

        Never overwrites a live COMPLETED record. Returns False when one exists.
        """
        snapshot = message.body[: self._config.failed_payload_snapshot_bytes]
        item: dict[str, Any] = {
            "pk": {"S": self.partition_key(message_key)},
            "consumer": {"S": self._config.consumer},
            "message_key": {"S": message_key},
            "status": {"S": Status.FAILED.value},
            "fingerprint": {"S": fingerprint},
            "source": {"S": message.source},
            "delivery_id": {"S": message.delivery_id},
            "error_code": {"S": error_code},
            "last_error": {"S": error[:1024] or error_code},
            "failed_at": {"S": utc_iso(now)},
            "payload_snapshot": {"B": snapshot} if snapshot else {"NULL": True},
            "payload_truncated": {"BOOL": len(message.body) > len(snapshot)},
            "gsi_open_pk": {"S": f"{self._config.consumer}#{Status.FAILED.value}"},
            "gsi_open_sk": {"S": utc_iso(now)},
        }
        try:
            self._client.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression=(
                    "attribute_not_exists(pk) OR #status <> :completed OR expires_at < :now"
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
