"""inbox-reaper: the scheduled sweep of the inbox table's open records (see lambda_inbox.reaper).

Settings come from the environment (INBOX_TABLE, INBOX_REAPER_DLQ_URLS, DEAD_LETTER_QUEUE_URL,
INBOX_REAPER_LEASE_GRACE_SECONDS, INBOX_REAPER_PAGE_SIZE, ...); only INBOX_TABLE is required.
Returns a JSON summary: reaped, dead_lettered, open, oldest_open_age_seconds, complete, ...
"""

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger

from lambda_inbox.aws_clients import dynamodb_client
from lambda_inbox.reaper import Reaper, ReaperSettings, emit_metrics

logger = Logger(service="inbox-reaper")
settings = ReaperSettings.from_env()
dynamodb = dynamodb_client()


def _log(message: str, extra: dict[str, Any]) -> None:
    logger.info(message, extra=extra)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    dry_run = bool(isinstance(event, dict) and event.get("dry_run"))
    remaining = getattr(context, "get_remaining_time_in_millis", None)

    time_left: Callable[[], float] | None = None
    if callable(remaining):

        def seconds_left() -> float:
            return float(remaining()) / 1000

        time_left = seconds_left

    reaper = Reaper(dynamodb, settings, log=_log)
    summary = reaper.reap_once(dry_run=dry_run, time_left=time_left)
    result = summary.to_dict()
    if not dry_run:
        emit_metrics(summary)
    logger.info("reaper run", extra={"summary": json.dumps(result, sort_keys=True)})
    return result
