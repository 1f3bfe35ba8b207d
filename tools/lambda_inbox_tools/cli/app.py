"""The `lambda-inbox` commands (Typer). Output in `render`, the dead-letter mover in `redrive`."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from lambda_inbox.store import get_record

from ..aws import Aws, CliError, Failure, Queue, UsageProblem, queue_arn, queue_depth, resolve_queue
from ..aws import translated as translated_errors
from ..redrive import (
    NATIVE_MAX_RATE,
    Mover,
    MoveReport,
    NativeMoveUnsupported,
    Where,
    follow_move_task,
    start_move_task,
)
from .records import (
    approximate_item_count,
    attention_records,
    parse_duration,
    summarize_open,
    take,
)
from .render import (
    Output,
    failed_table,
    oldest_document,
    preview_table,
    progress_label,
    reap_table,
    record_document,
    record_view,
    redrive_summary,
    stats_view,
)

APP_HELP = (
    "Look into a lambda-inbox inbox table and replay dead letters.\n\n"
    "Commands that read the inbox take --table (default: $INBOX_TABLE). All take "
    "--endpoint-url and --region (default: boto3's settings) and --json (one JSON document on "
    "stdout; progress and notes go to stderr)."
)

APP_EPILOG = """[bold]After a DLQ alarm:[/bold]

  lambda-inbox stats   --table Inbox --queue order-events-dlq
  lambda-inbox failed  --table Inbox --since 2h
  lambda-inbox show    order-events evt-0042 --table Inbox
  lambda-inbox redrive --from order-events-dlq --to order-events --dry-run
  lambda-inbox redrive --from order-events-dlq --to order-events

Exit status: 0 done, 1 failed, 2 usage error. Runbook: docs/operations.md."""

app = typer.Typer(
    name="lambda-inbox",
    help=APP_HELP,
    epilog=APP_EPILOG,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)

COMMON = "Common options"
TableOption = Annotated[
    str | None,
    typer.Option(
        "--table",
        metavar="NAME",
        envvar="INBOX_TABLE",
        help="Inbox table name.",
        show_default=False,
    ),
]
EndpointOption = Annotated[
    str | None,
    typer.Option(
        "--endpoint-url",
        metavar="URL",
        help="Endpoint for DynamoDB and SQS (a local stack).",
        rich_help_panel=COMMON,
    ),
]
RegionOption = Annotated[
    str | None,
    typer.Option("--region", metavar="REGION", help="AWS region.", rich_help_panel=COMMON),
]
JsonOption = Annotated[
    bool,
    typer.Option(
        "--json", help="One JSON document on stdout, for scripts.", rich_help_panel=COMMON
    ),
]


def run(argv: Sequence[str] | None = None) -> int:
    """Run the app; returns the exit status instead of exiting."""
    try:
        app(args=list(argv) if argv is not None else None, prog_name="lambda-inbox")
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        return code if isinstance(code, int) else 1
    return 0


@contextlib.contextmanager
def session(
    *,
    json_output: bool,
    endpoint_url: str | None,
    region: str | None,
    table: str | None = None,
) -> Iterator[tuple[Output, Aws]]:
    """What every command runs in: its output, its AWS clients, errors turned into messages."""
    output = Output(json_mode=json_output)
    aws = Aws(endpoint_url=endpoint_url, region=region)
    try:
        with translated_errors(aws, table=table):
            yield output, aws
    except CliError as problem:
        output.error(problem.message, exit_code=problem.exit_code)
        raise typer.Exit(problem.exit_code) from None


def require_table(table: str | None) -> str:
    if not table or not table.strip():
        raise UsageProblem("no table: pass --table or set INBOX_TABLE")
    return table.strip()


def _since(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--since") from None


# ---- show ---------------------------------------------------------------------------------------


@app.command(
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
        record = get_record(aws.dynamodb(), name, consumer, key)
        if record is None:
            raise Failure(
                f"no record for consumer {consumer!r} and key {key!r} in {name} (check both; "
                "`lambda-inbox failed` lists the open ones)"
            )
        now = time.time()
        if out.json_mode:
            out.emit(record_document(record, now))
        else:
            out.out.print(record_view(record, now))


# ---- failed -------------------------------------------------------------------------------------


@app.command(
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


# ---- reap ---------------------------------------------------------------------------------------


@app.command(
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
        settings = dataclasses.replace(settings, dead_letter_queues=queues)
        summary = Reaper(aws.dynamodb(), settings, sqs=aws.sqs()).reap_once(dry_run=dry_run)
        if json_output:
            output.emit(summary.to_dict())
        else:
            output.out.print(reap_table(summary))
        if summary.errors:
            raise Failure(f"{summary.errors} record(s) could not be reaped; see the log above")


# ---- redrive ------------------------------------------------------------------------------------


@app.command(
    epilog="Examples:\n\n"
    "  lambda-inbox redrive --from order-events-dlq --to order-events\n"
    "  lambda-inbox redrive --from order-events-dlq --to order-events \\\n"
    "      --where inbox-error-code=invalid_payload --limit 20 --dry-run\n"
    "  lambda-inbox redrive --from payment-events-dlq --to payment-replay --rate 50\n\n"
    "Without --where, --limit or --dry-run, SQS's own move task does the work where the "
    "endpoint has it (Ctrl-C cancels it); otherwise messages are moved by this command: sent "
    "to --to with body and attributes unchanged, then deleted from --from. Safe to interrupt "
    "and rerun: a message is never lost, at worst sent twice, and the consumer's inbox makes "
    "the second copy a no-op. --where compares message attributes (ANDed)."
)
def redrive(
    source: Annotated[
        str,
        typer.Option(
            "--from", metavar="DLQ", help="Dead-letter queue to move from (URL, name or ARN)."
        ),
    ],
    destination: Annotated[
        str,
        typer.Option(
            "--to", metavar="QUEUE", help="Queue to move to (URL, name or ARN), e.g. the source."
        ),
    ],
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            metavar="ATTR=VALUE",
            help="Only messages whose attribute ATTR is VALUE; repeat to AND.",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, metavar="N", help="Move at most N messages.")
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option("--rate", min=0.1, metavar="N", help="At most N messages a second."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Move nothing; list what would move."),
    ] = False,
    client_side: Annotated[
        bool,
        typer.Option("--client-side", help="Never use SQS's move task; move with this command."),
    ] = False,
    visibility_timeout: Annotated[
        int,
        typer.Option(
            "--visibility-timeout",
            min=5,
            max=43200,
            metavar="SECONDS",
            help="How long a received message stays hidden while it is moved.",
        ),
    ] = 60,
    wait: Annotated[
        int,
        typer.Option(
            "--wait",
            min=0,
            max=20,
            metavar="SECONDS",
            help="How long a receive waits before the queue counts as drained.",
        ),
    ] = 1,
    endpoint_url: EndpointOption = None,
    region: RegionOption = None,
    json_output: JsonOption = False,
) -> None:
    """Replay dead letters: move messages from a DLQ back to a queue."""
    try:
        filters = [Where.parse(text) for text in where or ()]
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--where") from None
    with session(json_output=json_output, endpoint_url=endpoint_url, region=region) as (out, aws):
        sqs = aws.sqs()
        from_queue = resolve_queue(sqs, source, option="--from", where=aws.where("sqs"))
        to_queue = resolve_queue(sqs, destination, option="--to", where=aws.where("sqs"))
        if from_queue.url == to_queue.url:
            raise UsageProblem("--from and --to are the same queue: name the queue to move to")
        native_rate = int(rate) if rate is not None and rate == int(rate) else None
        use_native = not (
            filters
            or limit is not None
            or dry_run
            or client_side
            or (rate is not None and (native_rate is None or native_rate > NATIVE_MAX_RATE))
        )
        report: MoveReport | None = None
        with _interrupt_on_sigterm() as stop:
            if use_native:
                try:
                    report = _native(out, aws, from_queue, to_queue, native_rate)
                except NativeMoveUnsupported as reason:
                    out.note(
                        f"SQS's message move task is not available here ({reason}); moving the "
                        "messages with this command instead"
                    )
            if report is None:
                stop.graceful = True
                report = _client_side(
                    out,
                    aws,
                    from_queue,
                    to_queue,
                    Mover(
                        sqs,
                        from_queue.url,
                        to_queue.url,
                        where=filters,
                        limit=limit,
                        rate=rate,
                        dry_run=dry_run,
                        visibility_timeout=visibility_timeout,
                        wait_seconds=wait,
                        stop=stop,
                    ),
                )
        _report_redrive(out, report, from_queue, to_queue)
        if not report.ok:
            raise typer.Exit(1)


class _Stop(threading.Event):
    """Set by the first SIGINT or SIGTERM while `graceful`: the client-side mover stops at its
    next safe point, between SQS calls, so it settles every message it received. Otherwise
    (SQS's move task, which is then cancelled, or a second signal) the signal interrupts."""

    graceful = False


@contextlib.contextmanager
def _interrupt_on_sigterm() -> Iterator[_Stop]:
    """SIGTERM stops a redrive like Ctrl-C (see `_Stop`)."""
    stop = _Stop()

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() or not stop.graceful:
            raise KeyboardInterrupt
        stop.set()

    try:
        previous = {
            number: signal.signal(number, interrupt) for number in (signal.SIGINT, signal.SIGTERM)
        }
    except ValueError:  # not the main thread
        yield stop
        return
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _progress(out: Output) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=out.err,
    )


def _native(
    out: Output, aws: Aws, source: Queue, destination: Queue, rate: int | None
) -> MoveReport:
    sqs = aws.sqs()
    source_arn = queue_arn(sqs, source)
    handle = start_move_task(
        aws.sqs(attempts=1), source_arn, queue_arn(sqs, destination), rate=rate
    )
    out.note(f"moving {source.name} -> {destination.name} with SQS's message move task")
    with _progress(out) as progress:
        task = progress.add_task("RUNNING", total=None)

        def show(report: MoveReport) -> None:
            progress.update(
                task,
                completed=report.moved,
                total=report.to_move,
                description=f"{report.status} · moved {report.moved}",
            )

        return follow_move_task(sqs, source_arn, handle, on_progress=show)


def _client_side(
    out: Output, aws: Aws, source: Queue, destination: Queue, mover: Mover
) -> MoveReport:
    depth = queue_depth(aws.sqs(), source)
    verb = "looking at" if mover.report.dry_run else "moving"
    out.note(
        f"{verb} {source.name} -> {destination.name}: about {depth['visible']} visible, "
        f"{depth['in_flight']} in flight"
    )
    with _progress(out) as progress:
        task = progress.add_task(progress_label(mover.report), total=depth["visible"] or None)

        def show(report: MoveReport) -> None:
            total = progress.tasks[0].total
            progress.update(
                task,
                completed=report.handled,
                total=max(total or 0, report.handled) or None,
                description=progress_label(report),
            )

        mover.on_progress = show
        return mover.run()


def _report_redrive(out: Output, report: MoveReport, source: Queue, destination: Queue) -> None:
    for message in report.errors:
        out.warn(message)
    if report.interrupted:
        out.warn(
            "interrupted: what was not moved is still in the source; run the same command again"
        )
    if out.json_mode:
        document: dict[str, Any] = {
            "source": source.url,
            "destination": destination.url,
            **report.document(),
        }
        out.emit(document)
        return
    if report.dry_run and report.would_move:
        out.out.print(preview_table(report))
    out.out.print(redrive_summary(report, source.name, destination.name))


# ---- stats --------------------------------------------------------------------------------------


@app.command(
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


# ---- local, create-table ------------------------------------------------------------------------


@app.command(
    epilog="Example: lambda-inbox local --messages 40 --seed 7 (what `make demo` runs)",
)
def local(
    keep_running: Annotated[
        bool,
        typer.Option("--keep-running", help="Keep the stack up after the report (Ctrl-C stops)."),
    ] = False,
    invoke_endpoint: Annotated[
        str | None,
        typer.Option(
            "--invoke-endpoint",
            metavar="URL",
            help="Invoke the functions through a Lambda Invoke endpoint (sam local start-lambda).",
        ),
    ] = None,
    messages: Annotated[
        int, typer.Option("--messages", min=4, metavar="N", help="Orders and payments to publish.")
    ] = 40,
    duration: Annotated[
        float,
        typer.Option(
            "--duration", min=10, metavar="SECONDS", help="Longest wait for the workload."
        ),
    ] = 90.0,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Workload random seed.")] = 7,
    backend: Annotated[
        str,
        typer.Option(
            "--backend", metavar="dynamodb-local|moto", help="DynamoDB engine (moto: no Java)."
        ),
    ] = "dynamodb-local",
    time_scale: Annotated[
        float,
        typer.Option(
            "--time-scale",
            min=0.001,
            max=1.0,
            help="Factor on visibility timeouts and schedule rates (1/30: 180 s -> 6 s).",
        ),
    ] = 1 / 30,
    template: Annotated[
        str, typer.Option("--template", metavar="PATH", help="The SAM template.")
    ] = "template.yaml",
    parameter: Annotated[
        list[str] | None,
        typer.Option("--parameter", metavar="NAME=VALUE", help="Template parameter override."),
    ] = None,
    dynamodb_endpoint: Annotated[
        str | None,
        typer.Option(
            "--dynamodb-endpoint",
            metavar="URL",
            help="Use this running DynamoDB instead of starting one (e.g. for sam local).",
        ),
    ] = None,
    sqs_endpoint: Annotated[
        str | None,
        typer.Option(
            "--sqs-endpoint",
            metavar="URL",
            help="Use this running SQS instead of starting a moto server.",
        ),
    ] = None,
    webhook_listen: Annotated[
        str,
        typer.Option(
            "--webhook-listen",
            metavar="HOST:PORT",
            help="Where the demo's webhook receiver listens (port 0: any free one).",
        ),
    ] = "127.0.0.1:0",
    stack_name: Annotated[
        str,
        typer.Option(
            "--stack-name",
            metavar="NAME",
            help="Prefix of the resource names (NAME-LogicalId), so stacks can share services.",
        ),
    ] = "lambda-inbox",
    json_output: JsonOption = False,
) -> None:
    """Run the application of template.yaml locally with the demo workload, then report.

    DynamoDB Local, SQS on a moto server and Kafka on librdkafka's mock cluster; tables, queues,
    topics and event sources come from the template. Exit 0 only if every invariant holds.

    With --invoke-endpoint the functions run behind a Lambda Invoke endpoint such as
    `sam local start-lambda`: start it with the tables and queues of this stack in its
    --env-vars (see `make sam-local`), and the DynamoDB and SQS endpoints its containers reach."""
    import sys
    from pathlib import Path

    from rich.console import Console

    if backend not in ("dynamodb-local", "moto"):
        raise typer.BadParameter("dynamodb-local or moto", param_hint="--backend")
    overrides: dict[str, str] = {}
    for item in parameter or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="--parameter")
        overrides[name] = value
    webhook_host, sep, webhook_port = webhook_listen.rpartition(":")
    if not sep or not webhook_host or not webhook_port.isdigit():
        raise typer.BadParameter(
            f"{webhook_listen!r} is not HOST:PORT", param_hint="--webhook-listen"
        )
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", stack_name):
        raise typer.BadParameter(
            "1 to 40 letters, digits, '-' or '_' (it starts queue and table names)",
            param_hint="--stack-name",
        )
    path = Path(template)
    if not path.is_file():
        raise typer.BadParameter(f"{path} not found", param_hint="--template")
    try:
        from ..local.render import run_with_display
    except ImportError as error:
        Console(stderr=True).print(
            f"lambda-inbox local needs the test extra ({error.name} missing): "
            "pip install 'lambda-inbox[test]'"
        )
        raise typer.Exit(2) from None
    from ..local.run import Options

    options = Options(
        template=path,
        messages=messages,
        duration=duration,
        seed=seed,
        backend=backend,
        scale=time_scale,
        invoke_endpoint=invoke_endpoint,
        keep_running=keep_running,
        parameters=overrides,
        dynamodb_endpoint=dynamodb_endpoint,
        sqs_endpoint=sqs_endpoint,
        webhook_host=webhook_host,
        webhook_port=int(webhook_port),
        stack_name=stack_name,
    )
    ok = run_with_display(options, json_output=json_output, stdout=sys.stdout)
    raise typer.Exit(0 if ok else 1)


@app.command(
    "create-table",
    epilog="Example: lambda-inbox create-table --table inbox --endpoint-url http://127.0.0.1:8000",
)
def create_table(
    table: TableOption = None,
    endpoint_url: EndpointOption = None,
    region: RegionOption = None,
    json_output: JsonOption = False,
) -> None:
    """Create an inbox table (local stacks and tests)."""
    from botocore.exceptions import ClientError

    from lambda_inbox.tables import create_inbox_table

    with session(json_output=json_output, endpoint_url=endpoint_url, region=region) as (out, aws):
        name = require_table(table)
        try:
            create_inbox_table(aws.dynamodb(), name)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ResourceInUseException":
                raise Failure(f"table {name!r} already exists") from None
            raise
        if out.json_mode:
            out.emit({"table": name, "created": True})
        else:
            out.out.print(f"created {name}")


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"lambda-inbox {version('lambda-inbox')}")
        except PackageNotFoundError:
            typer.echo("lambda-inbox (not installed as a distribution)")
        raise typer.Exit()


@app.callback()
def _main(
    _: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Look into a lambda-inbox inbox table and replay dead letters."""
