"""Zoo consumers whose dedupe lapses (devkit.zoo): sound for minutes, broken by a message that
comes back hours or days later (a dead-letter redrive, a replay), which the check plays on its
clock (tools/lambda_inbox_tools/testing/check/late.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from botocore.exceptions import ClientError

from .zoo_ledger import OK, Ledger, cancelled_by_condition, deliveries

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

#: The ledger's TTL attribute (`Ledger.in_memory` enables TTL on it).
EXPIRES_AT = "expires_at"


def inbox_kept_for(retention: timedelta) -> Callable[[Ledger], Handler]:
    """A transactional inbox whose records expire `retention` after they are written (on the
    ledger's clock, the check's)."""

    def consumer(ledger: Ledger) -> Handler:
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            for _, message in deliveries(event):
                event_id = str(message["event_id"])
                mark = ledger.mark(event_id)
                expires = int(ledger.clock() + retention.total_seconds())
                mark["Item"][EXPIRES_AT] = {"N": str(expires)}
                actions = [{"Put": mark}, {"Update": ledger.effect(event_id)}]
                try:
                    ledger.dynamodb.transact_write_items(TransactItems=actions)
                except ClientError as error:
                    if not cancelled_by_condition(error):
                        raise
            return OK

        return handler

    return consumer


#: Inbox records kept 15 minutes: a message redriven an hour later is applied again.
inbox_kept_15_minutes = inbox_kept_for(timedelta(minutes=15))
#: Inbox records kept 7 days, the redrive window the check plays by default (the control).
inbox_kept_7_days = inbox_kept_for(timedelta(days=7))


def client_request_token_only(ledger: Ledger) -> Handler:
    """No inbox record: the effect's transaction carries a `ClientRequestToken` made from the
    event id, which DynamoDB makes idempotent for 10 minutes only."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for _, message in deliveries(event):
            event_id = str(message["event_id"])
            ledger.dynamodb.transact_write_items(
                TransactItems=[{"Update": ledger.effect(event_id)}],
                ClientRequestToken=str(uuid.uuid5(uuid.NAMESPACE_URL, f"zoo/{event_id}")),
            )
        return OK

    return handler
