"""`reap`: one sweep of the reaper's own code over the inbox table."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ..aws import Failure, UsageProblem, resolve_queue
from .common import (
    EndpointOption,
    JsonOption,
    RegionOption,
    TableOption,
    command,
    require_table,
    session,
)
from .render import (
    reap_table,
)

# ---- reap ---------------------------------------------------------------------------------------


@command(
    epilog="Examples:\n\n"
    "  lambda-inbox reap --table Inbox --dry-run\n"
    "  lambda-inbox reap --table Inbox --dlq customer-notifications=notification-dlq\n\n"
    "The same pass as the scheduled reaper function: leases expired for longer than the grace "
    "(INBOX_REAPER_LEASE_GRACE_SECONDS, 900) become FAILED (lease_expired), and FAILED records "
    "nobody dead-lettered yet go to their consumer's DLQ, once. DLQs come from --dlq, "
    "INBOX_REAPER_DLQ_URLS (JSON) and DEAD_LETTER_QUEUE_URL, as for the function."
)
def reap(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what the pass would do, change nothing.")
    ] = False,
    dead_letter_queues: Annotated[
        list[str] | None,
        typer.Option(
            "--dlq",
            metavar="CONSUMER=QUEUE",
            help="The dead-letter queue (URL, name or ARN) of a consumer; repeatable.",
        ),
    ] = None,
    table: TableOption = None,
    endpoint_url: EndpointOption = None,
    region: RegionOption = None,
    json_output: JsonOption = False,
) -> None:
    """Run one reaper pass: fail stuck leases, dead-letter what will not be redelivered."""
    from lambda_inbox.reaper import Reaper, ReaperSettings

    with session(
        json_output=json_output, endpoint_url=endpoint_url, region=region, table=table
    ) as (output, aws):
        settings = ReaperSettings.from_env({**os.environ, "INBOX_TABLE": require_table(table)})
        queues = dict(settings.dead_letter_queues)
        for entry in dead_letter_queues or []:
            consumer, sep, queue = entry.partition("=")
            if not sep or not consumer.strip() or not queue.strip():
                raise UsageProblem(f"--dlq {entry!r}: expected CONSUMER=QUEUE")
            where = aws.where("sqs")
            resolved = resolve_queue(aws.sqs(), queue, option="--dlq", where=where)
            queues[consumer.strip()] = resolved.url
        settings = settings.replace(dead_letter_queues=queues)
        summary = Reaper(aws.dynamodb(), settings, sqs=aws.sqs()).reap_once(dry_run=dry_run)
        if json_output:
            output.emit(summary.to_dict())
        else:
            output.out.print(reap_table(summary))
        if summary.errors:
            raise Failure(f"{summary.errors} record(s) could not be reaped; see the log above")
