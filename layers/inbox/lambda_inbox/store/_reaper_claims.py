"""The reaper's writes of the inbox record: reaping an expired lease, claiming a FAILED record
for dead-lettering, and settling that claim (with or without the `dead_lettered_at` mark).

A claim is a `reaper_claim` token with an expiry, so two concurrent runs never both send a
record: only the run whose token stands may mark it dead-lettered.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from lambda_inbox._config import FAILED_RETENTION
from lambda_inbox.store._record import (
    OPEN_INDEX_PK,
    OPEN_INDEX_SK,
    PARTITION_KEY,
    TTL_ATTRIBUTE,
    InboxRecord,
    Status,
    open_index_pk,
    open_index_shard,
    utc_iso,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class ReaperClaims:
    """One reaper run's conditional writes on one inbox table, under the run's `token`."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        *,
        token: str,
        claim_seconds: float,
        failed_retention_seconds: float = FAILED_RETENTION.total_seconds(),
    ) -> None:
        self._client = client
        self.table = table
        self.token = token
        self._claim_seconds = claim_seconds
        self._failed_retention = failed_retention_seconds

    def reap_lease(self, record: InboxRecord, *, code: str, reason: str, now: float) -> bool:
        """IN_PROGRESS (expired, unchanged since read) -> FAILED with `code`, claimed by this run,
        expiring after the failed-record retention as every FAILED record does.

        False when the record changed meanwhile (taken over, completed or reaped by another run).
        """
        if record.lease_expires_at is None:
            raise ValueError(f"{record.pk} has no lease to reap")
        stamp = utc_iso(now)
        try:
            self._client.update_item(
                TableName=self.table,
                Key={PARTITION_KEY: {"S": record.pk}},
                UpdateExpression=(
                    "SET #status = :failed, error_code = :code, last_error = :error, "
                    "failed_at = :stamp, #open_pk = :open_pk, #open_sk = :stamp, "
                    "reaper_claim = :token, reaper_claim_expires = :claim_expires, "
                    "#expires = :expires"
                ),
                ConditionExpression=(
                    "#status = :in_progress AND #owner = :owner AND lease_expires_at = :lease"
                ),
                ExpressionAttributeNames={
                    "#status": "status",
                    "#owner": "owner",
                    "#open_pk": OPEN_INDEX_PK,
                    "#open_sk": OPEN_INDEX_SK,
                    "#expires": TTL_ATTRIBUTE,
                },
                ExpressionAttributeValues={
                    ":failed": {"S": Status.FAILED.value},
                    ":in_progress": {"S": Status.IN_PROGRESS.value},
                    ":expires": {"N": str(int(now + self._failed_retention))},
                    ":code": {"S": code},
                    ":error": {"S": reason},
                    ":stamp": {"S": stamp},
                    ":open_pk": {"S": open_index_pk(Status.FAILED, open_index_shard(record.pk))},
                    ":token": {"S": self.token},
                    ":claim_expires": {"N": str(int(now + self._claim_seconds))},
                    ":owner": {"S": record.owner or ""},
                    ":lease": {"N": f"{record.lease_expires_at:.3f}"},
                },
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def claim(self, record: InboxRecord, *, now: float) -> bool:
        """Claim a FAILED record not yet dead-lettered; False when another run holds it or it is
        done."""
        try:
            self._client.update_item(
                TableName=self.table,
                Key={PARTITION_KEY: {"S": record.pk}},
                UpdateExpression="SET reaper_claim = :token, reaper_claim_expires = :expires",
                ConditionExpression=(
                    "#status = :failed AND attribute_not_exists(dead_lettered_at) AND "
                    "(attribute_not_exists(reaper_claim_expires) OR reaper_claim_expires < :now)"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":failed": {"S": Status.FAILED.value},
                    ":token": {"S": self.token},
                    ":expires": {"N": str(int(now + self._claim_seconds))},
                    ":now": {"N": str(int(now))},
                },
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def settle(self, record: InboxRecord, *, dead_lettered: bool, now: float) -> None:
        """Drop this run's claim; with `dead_lettered`, mark the record sent (never again)."""
        expression = "REMOVE reaper_claim, reaper_claim_expires"
        values: dict[str, Any] = {":token": {"S": self.token}}
        if dead_lettered:
            expression = "SET dead_lettered_at = :stamp " + expression
            values[":stamp"] = {"S": utc_iso(now)}
        # Replaced meanwhile (a replay claimed or completed it): nothing to mark.
        with contextlib.suppress(self._client.exceptions.ConditionalCheckFailedException):
            self._client.update_item(
                TableName=self.table,
                Key={PARTITION_KEY: {"S": record.pk}},
                UpdateExpression=expression,
                ConditionExpression="reaper_claim = :token",
                ExpressionAttributeValues=values,
            )
