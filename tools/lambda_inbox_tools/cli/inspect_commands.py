"""`show`, `failed` and `stats`: what the inbox table and the queues hold."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from lambda_inbox.store import attention_records, get_record

from ..aws import Failure, Queue, queue_depth, resolve_queue
from .common import (
    EndpointOption,
    JsonOption,
    RegionOption,
    TableOption,
    _since,
    command,
    require_table,
    session,
)
from .records import (
    approximate_item_count,
    summarize_open,
    take,
)
from .render import (
    failed_table,
    oldest_document,
    record_document,
    record_view,
    stats_view,
)

# ---- show ---------------------------------------------------------------------------------------


@command(
    epilog="Example: lambda-inbox show order-events evt-order-0204 --table Inbox\n\n"
    "KEY is the record's message key: the inbox-message-key attribute of a dead letter, or "
    "the key column of `lambda-inbox failed`."
)
def show(
    consumer: Annotated[
        str, typer.Argument(metavar="CONSUMER", help="Consumer name, e.g. order-events.")
    ],
    key: Annotated[
        str, typer.Argument(metavar="KEY", help="Message key, e.g. the event's event_id.")
    ],
    table: TableOption = None,
    endpoint_url: EndpointOption = None,
    region: RegionOption = None,
    json_output: JsonOption = False,
) -> None:
    """Show one inbox record: status, times, error, stored payload."""
    with session(
        json_output=json_output, endpoint_url=endpoint_url, region=region, table=table
    ) as (out, aws):
        name = require_table(table)
        key = key.removeprefix(f"{consumer}#")  # the record's whole pk, as a scan shows it
        record = get_record(aws.dynamodb(), name, consumer, key)
        now = time.time()
        if record is None:
            raise Failure(_no_record(aws.dynamodb(), name, consumer, key, now))
        if out.json_mode:
            out.emit(record_document(record, now))
        else:
            out.out.print(record_view(record, now))


def _no_record(client: Any, table: str, consumer: str, key: str, now: float) -> str:
    """What a miss says: whether the consumer has open records at all (a mistyped consumer has
    none), and where to find the keys."""
    counts = summarize_open(client, table, now=now, consumer=consumer).consumers.get(consumer)
    missing = f"no record for consumer {consumer!r} and key {key!r} in {table}"
    if counts is None:
        return (
            f"{missing}; {consumer!r} has no open records either (is the consumer's name right? "
            "`lambda-inbox stats` lists the consumers with open records, and a completed record "
            "is found by its exact key only)"
        )
    return (
        f"{missing}; {consumer!r} has {counts.failed} failed and {counts.in_progress} in "
        f"progress: `lambda-inbox failed --consumer {consumer}` lists their keys"
    )


# ---- failed -------------------------------------------------------------------------------------


@command(
    epilog="Examples:\n\n"
    "  lambda-inbox failed --table Inbox --since 2h\n"
    "  lambda-inbox failed --table Inbox --consumer payment-events --limit 200 --json\n\n"
    "Reads the open-records index (every shard), never the table."
)
def failed(
    consumer: Annotated[
        str | None, typer.Option("--consumer", metavar="NAME", help="Only this consumer.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", metavar="DURATION", help="Only records opened within it: 30m, 2h, 7d."
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, metavar="N", help="At most N records.")
    ] = 50,
    table: TableOption = None,
    endpoint_url: EndpointOption = None,
    region: RegionOption = None,
    json_output: JsonOption = False,
) -> None:
    """List FAILED records and expired leases, newest first."""
    since_seconds = _since(since)
    with session(
        json_output=json_output, endpoint_url=endpoint_url, region=region, table=table
    ) as (out, aws):
        name = require_table(table)
        now = time.time()
        records, more = take(
            attention_records(
                aws.dynamodb(), name, now=now, consumer=consumer, since_seconds=since_seconds
            ),
            limit,
        )
        if out.json_mode:
            out.emit(
                {
                    "table": name,
                    "count": len(records),
                    "more": more,
                    "records": [record_document(record, now) for record in records],
                }
            )
            return
        if not records:
            out.out.print("no FAILED records and no expired leases" + _scope(consumer, since))
            return
        out.out.print(failed_table(records, now))
        tail = f"{len(records)} record{'s' if len(records) != 1 else ''}"
        if more:
            tail += f", newest first; more exist: raise --limit (now {limit})"
        out.out.print(tail + _scope(consumer, since))


def _scope(consumer: str | None, since: str | None) -> str:
    parts = []
    if consumer:
        parts.append(f"consumer {consumer}")
    if since:
        parts.append(f"opened within {since}")
    return f" ({', '.join(parts)})" if parts else ""


# ---- stats --------------------------------------------------------------------------------------


@command(
    epilog="Example: lambda-inbox stats --table Inbox --queue order-events-dlq "
    "--queue payment-events-dlq\n\n"
    "Counts come from the open-records index (no table scan); the total is DescribeTable's "
    "approximate ItemCount."
)
def stats(
    queue: Annotated[
        list[str] | None,
        typer.Option("--queue", metavar="QUEUE", help="A queue to show the depth of; repeatable."),
    ] = None,
    consumer: Annotated[
        str | None, typer.Option("--consumer", metavar="NAME", help="Only this consumer.")
    ] = None,
    table: TableOption = None,
    endpoint_url: EndpointOption = None,
    region: RegionOption = None,
    json_output: JsonOption = False,
) -> None:
    """Open records per consumer, the oldest one, and queue depths."""
    with session(
        json_output=json_output, endpoint_url=endpoint_url, region=region, table=table
    ) as (out, aws):
        name = require_table(table)
        queues: list[dict[str, Any]] = []
        if queue:
            sqs = aws.sqs()
            for given in queue:
                resolved = resolve_queue(sqs, given, option="--queue", where=aws.where("sqs"))
                queues.append({"queue": resolved.name, "url": resolved.url})
        now = time.time()
        dynamodb = aws.dynamodb()
        items = approximate_item_count(dynamodb, name)
        summary = summarize_open(dynamodb, name, now=now, consumer=consumer)
        for entry in queues:
            entry.update(queue_depth(aws.sqs(), Queue(entry["queue"], entry["url"])))
        if out.json_mode:
            out.emit(
                {
                    "table": name,
                    "items_approximate": items,
                    "open": {
                        consumer_name: counts.document()
                        for consumer_name, counts in summary.consumers.items()
                    },
                    "open_total": summary.total.document(),
                    "oldest_open": oldest_document(summary, now),
                    "queues": queues,
                }
            )
            return
        out.out.print(stats_view(name, items, summary, queues, now))
