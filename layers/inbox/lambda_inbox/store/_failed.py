"""FAILED records: what the inbox keeps of a dead-lettered message, for the incident review.

A FAILED record holds the message's key, fingerprint, source, delivery id, the error, and a
snapshot of the payload of at most `Retention.snapshot_bytes` (8 KiB by default; the whole
body stays in the dead letter); about 0.5 KB besides the snapshot. It expires after the
failed-record retention (`Retention.failed`, 14 days, SQS's longest retention), so
that a poison storm leaves nothing behind for good. It never replaces a live COMPLETED record.

The dead-letter stage writes the records of one batch's poison together (`put_together`): one
`TransactWriteItems` of up to 100 where each alone was a `PutItem` (a transaction's writes cost
two write units per KB where a `PutItem`'s cost one: a tenth of the requests for twice the
units; docs/CAPACITY.md), a lone one still a `PutItem`. Loaded by the first poison message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from lambda_inbox._config import MAX_TRANSACTION_ACTIONS
from lambda_inbox.store._record import PARTITION_KEY, TTL_ATTRIBUTE, InboxRecord, Status, utc_iso

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from lambda_inbox._messages import InboundMessage

CONDITION_FAILED = "ConditionalCheckFailed"


class FailedRecords(Protocol):
    """Where a consumer's FAILED records go, and what they keep (`store.inbox.InboxStore`)."""

    table: str
    consumer: str
    #: Bytes of the payload a record keeps, and seconds it is kept.
    snapshot_bytes: int
    failed_retention: float


def failed_put(
    store: FailedRecords,
    message: InboundMessage,
    message_key: str,
    fingerprint: str,
    *,
    error_code: str,
    error: str,
    now: float,
    dead_lettered: bool = True,
) -> dict[str, Any]:
    """The `Put` of a FAILED record (module docstring), on condition that no live COMPLETED
    record holds the key."""
    body = message.body
    snapshot = body[: store.snapshot_bytes]
    record = InboxRecord(
        consumer=store.consumer,
        message_key=message_key,
        status=Status.FAILED,
        fingerprint=fingerprint,
        expires_at=int(now + store.failed_retention),
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
    return {
        "Put": {
            "TableName": store.table,
            "Item": record.to_item(),
            "ConditionExpression": (
                f"attribute_not_exists({PARTITION_KEY}) OR #status <> :completed "
                f"OR {TTL_ATTRIBUTE} < :now"
            ),
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":completed": {"S": Status.COMPLETED.value},
                ":now": {"N": str(int(now))},
            },
        }
    }


def put_together(client: DynamoDBClient, puts: Sequence[dict[str, Any]]) -> int:
    """Write FAILED records (`failed_put`s) in transactions of up to 100; returns how many were
    written. One whose key a live COMPLETED record holds is left out (its condition cancels the
    transaction, which is sent again without it); two of one key keep the later. A lone record
    is a `PutItem`: half the write units of a one-action transaction. Raises the client's
    errors for the rest."""
    by_key = {put["Put"]["Item"][PARTITION_KEY]["S"]: put for put in puts}
    pending = list(by_key.values())
    if len(pending) == 1:
        try:
            client.put_item(**pending[0]["Put"])
        except client.exceptions.ConditionalCheckFailedException:
            return 0
        return 1
    written = 0
    for start in range(0, len(pending), MAX_TRANSACTION_ACTIONS):
        group = pending[start : start + MAX_TRANSACTION_ACTIONS]
        while group:
            try:
                client.transact_write_items(TransactItems=group)  # type: ignore[arg-type]
            except client.exceptions.TransactionCanceledException as error:
                reasons = error.response.get("CancellationReasons", [])
                kept = [
                    put
                    for put, reason in zip(group, reasons, strict=False)
                    if reason.get("Code") != CONDITION_FAILED
                ]
                if len(kept) == len(group):  # not a COMPLETED record's doing: the caller's
                    raise
                group = kept
                continue
            written += len(group)
            break
    return written
