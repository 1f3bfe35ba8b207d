"""The consumer's side of the inbox table: the duplicate filter's batch read, the inbox `Put` of
every transaction, the FAILED record of a dead-lettered message (written alone, or with others
in one transaction: `failed`), and one record by key.

Every attribute name and condition of these writes is here or in `record`; leased mode's writes
are in `leases`, the reaper's in `reaping`, the index reads in `open_index`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from lambda_inbox._config import FAILED_RETENTION
from lambda_inbox._internal import RetryPolicy
from lambda_inbox.store._attribute_values import ItemIdentity, item_identity
from lambda_inbox.store._record import (
    PARTITION_KEY,
    TTL_ATTRIBUTE,
    InboxRecord,
    Status,
    record_pk,
    utc_iso,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from lambda_inbox._config import InboxConfig
    from lambda_inbox._messages import InboundMessage

BATCH_GET_LIMIT = 100
_BATCH_GET_ROUNDS = 8
#: What the duplicate filter reads of each record.
_FILTER_ATTRIBUTES = ("message_key", "status", "fingerprint", TTL_ATTRIBUTE)


#: The handler's result as stored: its JSON, keys sorted.
result_text = json.JSONEncoder(sort_keys=True, default=str).encode


#: A completion put's condition, names and values (`_claim`).
_Claim = tuple[str, dict[str, str], dict[str, dict[str, str]]]
#: What the completion puts made at one time share: that time, the attribute values of
#: `completed_at` and `expires_at`, and the claim outside leased mode (a plain tuple: a
#: NamedTuple class costs cold start).
_Stamp = tuple[float, dict[str, str], dict[str, str], _Claim]


def _sleep(seconds: float) -> bool:
    """Wait `seconds` (no deadline to keep)."""
    time.sleep(seconds)
    return True


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
        failed_retention_seconds: float = FAILED_RETENTION.total_seconds(),
        retry: RetryPolicy | None = None,
    ) -> None:
        self._client = self.client = client
        #: The backoff between rounds of a batch read's unprocessed keys.
        self._retry = retry or RetryPolicy()
        self.table = table
        self.consumer = consumer
        self._retention = retention_seconds
        #: Seconds a FAILED record is kept, and bytes of its payload snapshot (`failed`).
        self.failed_retention = failed_retention_seconds
        self.snapshot_bytes = snapshot_bytes
        #: What the completion puts of one time share (`_stamp`): made once per transaction.
        self._stamped: _Stamp = (-1.0, {}, {}, _claim(0, None))
        #: The values every COMPLETED record of this consumer holds.
        self._consumer = {"S": consumer}
        self._completed = {"S": Status.COMPLETED.value}

    @classmethod
    def from_config(cls, client: DynamoDBClient, config: InboxConfig) -> InboxStore:
        return cls(
            client,
            table=config.inbox_table,
            consumer=config.consumer,
            retention_seconds=config.retention.completed.total_seconds(),
            snapshot_bytes=config.retention.snapshot_bytes,
            failed_retention_seconds=config.retention.failed.total_seconds(),
            retry=config.retry,
        )

    def pk(self, message_key: str) -> str:
        return record_pk(self.consumer, message_key)

    def item_identity(self, message_key: str) -> ItemIdentity:
        """Names the inbox item the way the planner names items (one action per item)."""
        return item_identity(self.table, {PARTITION_KEY: self.pk(message_key)})

    def _stamp(self, now: float) -> _Stamp:
        """The time fields and claim of the completion puts made at `now`: the puts of one
        transaction share one time. One attribute holds them, so batches committing at once in
        one process each see a whole stamp."""
        stamped = self._stamped
        if stamped[0] != now:
            claim = _claim(int(now), None)
            expires_at = {"N": f"{int(now + self._retention)}"}
            stamped = self._stamped = (now, {"S": utc_iso(now)}, expires_at, claim)
        return stamped

    def fetch(
        self,
        message_keys: Iterable[str],
        *,
        now: float,
        pause: Callable[[float], bool] = _sleep,
    ) -> dict[str, InboxRecord]:
        """Live records by message key: one eventually consistent `BatchGetItem` per 100 keys.

        Unprocessed keys are read again after the retry policy's backoff, waited by `pause`
        (`Deadline.sleep`: False when the deadline leaves no room, and the read stops there).
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
                last = round_number + 1 == _BATCH_GET_ROUNDS
                if not request or last or not pause(self._retry.backoff(round_number + 1)):
                    break
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
        _, completed_at, expires_at, claim = self._stamp(now)
        if lease_owner is not None:
            claim = _claim(int(now), lease_owner)
        condition, names, values = claim
        # `InboxRecord(..., Status.COMPLETED, ...).to_item()`, built directly: one goes into
        # every transaction for every message, and the direct build saves 1.1% of a batch's
        # work, measured beside `to_item` (docs/PERFORMANCE.md, "One persistence layer");
        # tests/unit/store/test_store.py holds the two equal. Its values of one consumer and time
        # are shared: requests are only read once made.
        item = {
            PARTITION_KEY: {"S": record_pk(self.consumer, message_key)},
            "consumer": self._consumer,
            "message_key": {"S": message_key},
            "status": self._completed,
        }
        if fingerprint:
            item["fingerprint"] = {"S": fingerprint}
        if message.source:
            item["source"] = {"S": message.source}
        item["completed_at"] = completed_at
        if result:
            item["result"] = {"S": result_text(result)}
        item[TTL_ATTRIBUTE] = expires_at
        return {
            "Put": {
                "TableName": self.table,
                "Item": item,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def mark_failed(
        self, message: InboundMessage, message_key: str, fingerprint: str, **details: Any
    ) -> bool:
        """Record a message as FAILED (`failed.failed_put`, whose keywords `details` are: an
        incident artifact with a bounded snapshot, removed by TTL after the failed-record
        retention); False when a live COMPLETED record holds its key (never overwritten)."""
        from lambda_inbox.store._failed import failed_put, put_together  # the first poison's

        put = failed_put(self, message, message_key, fingerprint, **details)
        return put_together(self._client, [put]) == 1


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


@lru_cache(maxsize=8)  # the puts of one transaction share one time
def _claim(
    now: int, lease_owner: str | None
) -> tuple[str, dict[str, str], dict[str, dict[str, str]]]:
    """The condition of a completion `Put`, its names and its values: the record is absent,
    expired or FAILED; in leased mode, still the IN_PROGRESS lease of `lease_owner`. The old
    item comes back on failure (`ALL_OLD`), so the classifier can tell a duplicate from a lost
    lease. Made once per time and owner, shared by the puts of a transaction: requests are never
    changed once made."""
    if lease_owner is not None:
        return (
            "#status = :in_progress AND #owner = :owner",
            {"#status": "status", "#owner": "owner"},
            {":in_progress": {"S": Status.IN_PROGRESS.value}, ":owner": {"S": lease_owner}},
        )
    return (
        f"attribute_not_exists({PARTITION_KEY}) OR {TTL_ATTRIBUTE} < :now OR #status = :failed",
        {"#status": "status"},
        {":now": {"N": str(now)}, ":failed": {"S": Status.FAILED.value}},
    )
