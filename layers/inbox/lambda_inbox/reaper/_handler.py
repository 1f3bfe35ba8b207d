"""The reaper as a Lambda handler, for a team's own template (`Handler:` a module of the
function's code that calls it, with the library's layer).

Settings come from the environment (`ReaperSettings.from_env`: `INBOX_TABLE`,
`INBOX_REAPER_DLQ_URLS`, `DEAD_LETTER_QUEUE_URL`, `INBOX_REAPER_LEASE_GRACE_SECONDS`,
`INBOX_REAPER_PAGE_SIZE`, ...; only `INBOX_TABLE` is required), read with the DynamoDB client on
each invocation (a scheduled run every few minutes: making the client is small beside the sweep,
and tests that change the environment or start moto later are served right). Returns the run's
JSON summary: `reaped`, `dead_lettered`, `open`, `oldest_open_age_seconds`, `complete`, ...;
`{"dry_run": true}` counts without writing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger

from lambda_inbox._internal.aws_clients import dynamodb_client
from lambda_inbox.reaper._settings import ReaperSettings
from lambda_inbox.reaper._summary import emit_metrics
from lambda_inbox.reaper._sweep import Reaper

logger = Logger(service="inbox-reaper")


def handler(event: Any, context: Any) -> dict[str, Any]:
    """One reaper run, bounded by the invocation's time left."""
    settings, dynamodb = ReaperSettings.from_env(), dynamodb_client()
    dry_run = bool(isinstance(event, dict) and event.get("dry_run"))
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    time_left: Callable[[], float] | None = None
    if callable(remaining):

        def seconds_left() -> float:
            return float(remaining()) / 1000

        time_left = seconds_left

    def log(message: str, extra: dict[str, Any]) -> None:
        logger.info(message, extra=extra)

    summary = Reaper(dynamodb, settings, log=log).reap_once(dry_run=dry_run, time_left=time_left)
    result = summary.to_dict()
    if not dry_run:
        emit_metrics(summary)
    logger.info("reaper run", extra={"summary": json.dumps(result, sort_keys=True)})
    return result
