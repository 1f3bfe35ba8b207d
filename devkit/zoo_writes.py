"""Zoo consumers that write more than their commit (devkit.zoo): a harmless item first (an audit
item, a delivery counter), then a commit in separate writes, which a fault after the first
write never shows (tools/lambda_inbox_tools/testing/check/schedule.py plays one between every
two writes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from .zoo_ledger import OK, RUN, Ledger, cancelled_by_condition, deliveries

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def _audit(ledger: Ledger, event_id: str) -> None:
    """The harmless first write: an audit item of the delivery, put as often as it comes."""
    item = {"pk": {"S": RUN}, "sk": {"S": f"AUDIT#{event_id}"}}
    ledger.dynamodb.put_item(TableName=ledger.table, Item=item)


def audit_then_effect_then_mark(ledger: Ledger) -> Handler:
    """An audit item first; then skips what is marked, applies, and marks (two writes more)."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for _, message in deliveries(event):
            event_id = str(message["event_id"])
            _audit(ledger, event_id)
            if not ledger.marked(event_id):
                ledger.apply(event_id)
                ledger.dynamodb.put_item(**ledger.mark(event_id, conditional=False))
        return OK

    return handler


def counter_then_mark_then_effect(ledger: Ledger) -> Handler:
    """Counts every delivery on a counter first; then marks (conditionally) and applies."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for _, message in deliveries(event):
            event_id = str(message["event_id"])
            ledger.dynamodb.update_item(
                TableName=ledger.table,
                Key={"pk": {"S": RUN}, "sk": {"S": "COUNTER"}},
                UpdateExpression="ADD received :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
            try:
                ledger.dynamodb.put_item(**ledger.mark(event_id))
            except ClientError as error:
                if cancelled_by_condition(error):
                    continue
                raise
            ledger.apply(event_id)
        return OK

    return handler


def audit_then_transaction(ledger: Ledger) -> Handler:
    """An audit item first, then the inbox record and the effect in one transaction (the
    control)."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for _, message in deliveries(event):
            _audit(ledger, str(message["event_id"]))
            ledger.commit(str(message["event_id"]))
        return OK

    return handler
