"""Leased mode's writes of the inbox record: the claim (a conditional `IN_PROGRESS` put with an
owner token and a lease expiry), and a failed attempt on a lease that is still ours.

What the states mean and when each write happens is in the leased-mode stage (`leases`); the
stage hands over the message, its key and fingerprint, and the policy's numbers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from lambda_inbox.store._inbox import get_record
from lambda_inbox.store._record import (
    OPEN_INDEX_PK,
    OPEN_INDEX_SK,
    PARTITION_KEY,
    TTL_ATTRIBUTE,
    InboxRecord,
    Status,
    open_index_pk,
    open_index_shard,
    record_pk,
    utc_iso,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from lambda_inbox._messages import InboundMessage

#: Optimistic claim rounds before a contended key is reported `in_progress`.
_CLAIM_ROUNDS = 3


class ClaimState(StrEnum):
    CLAIMED = "claimed"
    COMPLETED = "completed"
    HELD = "held"
    EXHAUSTED = "exhausted"


@dataclass(frozen=True, slots=True)
class Claim:
    state: ClaimState
    owner: str = ""
    attempt: int = 0
    lease_expires_at: float = 0.0
    #: The stored record that decided a state other than CLAIMED.
    record: InboxRecord | None = None


class LeaseWrites:
    """Claims and releases leases on inbox records of one consumer: a claim holds a message for
    `lease_seconds`, a message gets `max_attempts` claims, and a failed attempt releases its
    lease at once with `release_on_failure`."""

    def __init__(
        self,
        client: DynamoDBClient,
        *,
        table: str,
        consumer: str,
        lease_seconds: float = 60.0,
        max_attempts: int = 5,
        release_on_failure: bool = False,
        snapshot_bytes: int = 8 * 1024,
    ) -> None:
        self._client = client
        self.table = table
        self.consumer = consumer
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self.release_on_failure = release_on_failure
        self._snapshot_bytes = snapshot_bytes

    def claim(
        self, message: InboundMessage, message_key: str, fingerprint: str, *, now: float
    ) -> Claim:
        """Claim `message_key`: read the record (strongly consistent), then write the lease
        on condition that the record is still what was read (optimistic, a few rounds)."""
        for _ in range(_CLAIM_ROUNDS):
            record = get_record(self._client, self.table, self.consumer, message_key)
            names = {"#status": "status", "#owner": "owner"}
            values: dict[str, Any] = {}
            attempt = 1
            if record is None or not record.is_live(now):
                condition = f"attribute_not_exists({PARTITION_KEY}) OR {TTL_ATTRIBUTE} < :now"
                values[":now"] = {"N": str(int(now))}
                names = {}
            elif record.status is Status.COMPLETED:
                return Claim(ClaimState.COMPLETED, record=record)
            elif record.status is Status.FAILED:  # a replay after a fix: a fresh start
                condition = "#status = :failed"
                values[":failed"] = {"S": Status.FAILED.value}
                names = {"#status": "status"}
            else:
                if not record.lease_expired(now):
                    return Claim(ClaimState.HELD, record=record)
                if record.attempts >= self.max_attempts:
                    return Claim(ClaimState.EXHAUSTED, attempt=record.attempts, record=record)
                attempt = record.attempts + 1
                condition = "#status = :in_progress AND #owner = :old_owner"
                values[":in_progress"] = {"S": Status.IN_PROGRESS.value}
                values[":old_owner"] = {"S": record.owner or ""}
            owner = uuid.uuid4().hex
            expires = now + self.lease_seconds
            body = message.body
            snapshot = body[: self._snapshot_bytes]
            item = InboxRecord(
                consumer=self.consumer,
                message_key=message_key,
                status=Status.IN_PROGRESS,
                fingerprint=fingerprint,
                source=message.source,
                delivery_id=message.delivery_id,
                attempts=attempt,
                lease_expires_at=expires,
                owner=owner,
                payload_snapshot=snapshot,
                payload_truncated=len(body) > len(snapshot),
                open_since=utc_iso(expires),
            ).to_item()
            request: dict[str, Any] = {
                "TableName": self.table,
                "Item": item,
                "ConditionExpression": condition,
            }
            if names:
                request["ExpressionAttributeNames"] = names
            if values:
                request["ExpressionAttributeValues"] = values
            try:
                self._client.put_item(**request)
            except self._client.exceptions.ConditionalCheckFailedException:
                continue  # someone else wrote the record in between: look again
            return Claim(ClaimState.CLAIMED, owner, attempt, expires)
        return Claim(ClaimState.HELD)

    def fail_attempt(
        self, message_key: str, owner: str, *, code: str, error: str, now: float
    ) -> bool:
        """Record a transient failure on our lease; release it with `release_on_failure`.

        Returns False when the lease is no longer ours (nothing written)."""
        pk = record_pk(self.consumer, message_key)
        expression = "SET error_code = :code, last_error = :error"
        values: dict[str, Any] = {
            ":code": {"S": code},
            ":error": {"S": error[:1024] or code},
            ":in_progress": {"S": Status.IN_PROGRESS.value},
            ":owner": {"S": owner},
        }
        names = {"#status": "status", "#owner": "owner"}
        if self.release_on_failure:
            expression += ", lease_expires_at = :released, #open_pk = :open_pk, #open_sk = :since"
            values[":released"] = {"N": f"{now:.3f}"}
            values[":open_pk"] = {
                "S": open_index_pk(Status.IN_PROGRESS, open_index_shard(pk)),
            }
            values[":since"] = {"S": utc_iso(now)}
            names["#open_pk"] = OPEN_INDEX_PK
            names["#open_sk"] = OPEN_INDEX_SK
        try:
            self._client.update_item(
                TableName=self.table,
                Key={PARTITION_KEY: {"S": pk}},
                UpdateExpression=expression,
                ConditionExpression="#status = :in_progress AND #owner = :owner",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True
