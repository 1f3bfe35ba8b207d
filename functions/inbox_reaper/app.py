"""inbox-reaper: the scheduled sweep of the inbox table's open records (docs/operations.md).

Settings come from the environment (INBOX_TABLE, INBOX_REAPER_DLQ_URLS, DEAD_LETTER_QUEUE_URL,
INBOX_REAPER_LEASE_GRACE_SECONDS, INBOX_REAPER_PAGE_SIZE, ...); only INBOX_TABLE is required.
Returns a JSON summary: reaped, dead_lettered, open, oldest_open_age_seconds, complete, ...
"""

from typing import Any

from lambda_inbox.reaper import handler as reap


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return reap(event, context)
