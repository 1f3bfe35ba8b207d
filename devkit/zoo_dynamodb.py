"""Zoo consumers that misread DynamoDB (devkit.zoo): a cancelled transaction is not always a
duplicate, a batch write may leave items unprocessed without an error, and a read before an
unconditional write proves nothing (another invocation holding the message, or a copy that
missed the last commit, reads the same "not processed").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from .zoo_ledger import OK, RUN, Ledger, deliveries

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def every_cancellation_a_duplicate(ledger: Ledger) -> Handler:
    """A transactional inbox that takes any `TransactionCanceledException` for "already
    processed", whatever its reasons say (a `TransactionConflict` or `ThrottlingError` is not)."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for _, message in deliveries(event):
            event_id = str(message["event_id"])
            actions = [{"Put": ledger.mark(event_id)}, {"Update": ledger.effect(event_id)}]
            try:
                ledger.dynamodb.transact_write_items(TransactItems=actions)
            except ClientError as error:
                if error.response["Error"]["Code"] == "TransactionCanceledException":
                    continue
                raise
        return OK

    return handler


def _put(sk: str, **attributes: Any) -> dict[str, Any]:
    item = {"pk": {"S": RUN}, "sk": {"S": sk}, **attributes}
    return {"PutRequest": {"Item": item}}


def _batch_writer(ledger: Ledger, retry_unprocessed: bool) -> Handler:
    """What is not marked: the effects put (an idempotent `applied = 1`) in one batch write,
    then the marks in another."""

    def write(requests: list[dict[str, Any]]) -> None:
        pending: dict[str, list[dict[str, Any]]] = {ledger.table: requests}
        while pending:
            answer = ledger.dynamodb.batch_write_item(RequestItems=pending)
            pending = (answer.get("UnprocessedItems") or {}) if retry_unprocessed else {}

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        ids = dict.fromkeys(str(message["event_id"]) for _, message in deliveries(event))
        fresh = [event_id for event_id in ids if not ledger.marked(event_id)]
        if fresh:
            write([_put(f"EFFECT#{i}", applied={"N": "1"}) for i in fresh])
            write([_put(f"INBOX#{i}") for i in fresh])
        return OK

    return handler


def ignores_unprocessed_items(ledger: Ledger) -> Handler:
    """Batch writes whose `UnprocessedItems` are never sent again."""
    return _batch_writer(ledger, retry_unprocessed=False)


def retries_unprocessed_items(ledger: Ledger) -> Handler:
    """The same, sending `UnprocessedItems` again until none are left (the control)."""
    return _batch_writer(ledger, retry_unprocessed=True)


def _reads_then_writes(consistent: bool) -> Callable[[Ledger], Handler]:
    def consumer(ledger: Ledger) -> Handler:
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            for _, message in deliveries(event):
                event_id = str(message["event_id"])
                if ledger.marked(event_id, consistent=consistent):
                    continue
                actions = [
                    {"Put": ledger.mark(event_id, conditional=False)},
                    {"Update": ledger.effect(event_id)},
                ]
                ledger.dynamodb.transact_write_items(TransactItems=actions)
            return OK

        return handler

    return consumer


#: Reads whether the message is marked, then commits the mark and the effect in one transaction
#: whose mark has no condition: sound one invocation at a time, but two invocations holding the
#: same message both read "not marked" and both apply it.
reads_then_writes = _reads_then_writes(consistent=True)
#: The same, reading without `ConsistentRead`: a delivery right after the commit may read the
#: copy that has not seen it yet (tools/lambda_inbox_tools/testing/check/dynamodb/stale.py).
reads_stale_then_writes = _reads_then_writes(consistent=False)
