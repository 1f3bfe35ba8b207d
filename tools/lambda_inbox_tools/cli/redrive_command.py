"""`redrive`: replay dead letters with SQS's move task or the client-side mover
(`lambda_inbox_tools.redrive`), with progress, and stop cleanly on SIGINT or SIGTERM."""

from __future__ import annotations

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

from ..aws import Aws, Queue, UsageProblem, queue_arn, queue_depth, resolve_queue
from ..redrive import (
    NATIVE_MAX_RATE,
    Mover,
    MoveReport,
    NativeMoveUnsupported,
    Where,
    follow_move_task,
    start_move_task,
)
from .common import (
    EndpointOption,
    JsonOption,
    RegionOption,
    command,
    interrupt_on_signals,
    session,
)
from .render import (
    Output,
    preview_table,
    progress_label,
    redrive_summary,
)

# ---- redrive ------------------------------------------------------------------------------------


@command(
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
        with interrupt_on_signals() as stop:
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
