"""Output of the command line: Rich tables on stdout for people, one JSON document for scripts.

Progress bars, notes and errors go to stderr, so `--json` leaves stdout to the document alone.
Values that come from records or messages are printed as plain `Text`, never as Rich markup.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.json import JSON
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from lambda_inbox.store import InboxRecord, Status, epoch_of, utc_iso

from ..redrive import MoveReport
from .records import OpenSummary

if TYPE_CHECKING:
    from lambda_inbox.reaper import ReapSummary

#: How much of `last_error` a table shows (`show` prints all of it).
ERROR_CHARS = 100

STATUS_STYLES = {
    Status.FAILED: "bold red",
    Status.IN_PROGRESS: "yellow",
    Status.COMPLETED: "green",
}


class Output:
    """Where a command writes: `out` (stdout) for results, `err` (stderr) for everything else."""

    def __init__(self, *, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.out = Console(highlight=False)
        self.err = Console(stderr=True, highlight=False)

    def emit(self, document: Mapping[str, Any]) -> None:
        """The one JSON document of a `--json` run."""
        sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()

    def note(self, message: str) -> None:
        self.err.print(Text(message, style="dim"))

    def warn(self, message: str) -> None:
        self.err.print(Text(message, style="yellow"))

    def error(self, message: str, *, exit_code: int) -> None:
        self.err.print(Text(f"error: {message}", style="bold red"))
        if self.json_mode:
            self.emit({"error": message, "exit_code": exit_code})


def clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


# ---- times --------------------------------------------------------------------------------------


def span(seconds: float) -> str:
    """A duration for people: 45s, 12m, 3h 05m, 2d 04h."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{int(seconds)}s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"


def relative(epoch: float | None, now: float) -> str:
    if epoch is None:
        return ""
    delta = epoch - now
    return f"in {span(delta)}" if delta > 0 else f"{span(delta)} ago"


def moment(iso: str | None, now: float) -> str:
    """`2026-03-01 14:02:11 UTC (12m ago)`."""
    epoch = epoch_of(iso)
    if epoch is None:
        return iso or ""
    shown = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{shown} ({relative(epoch, now)})"


# ---- records ------------------------------------------------------------------------------------


def payload_view(snapshot: bytes, *, truncated: bool) -> dict[str, Any]:
    """The stored payload as JSON if it parses, else text if it is UTF-8, else base64."""
    view: dict[str, Any] = {"bytes": len(snapshot), "truncated": truncated}
    text: str | None
    try:
        text = snapshot.decode("utf-8")
    except UnicodeDecodeError as error:
        # A snapshot cut inside a multi-byte character is still text.
        text = None
        if truncated and error.start >= len(snapshot) - 3:
            try:
                text = snapshot[: error.start].decode("utf-8")
            except UnicodeDecodeError:
                text = None
    if text is None:
        view.update(encoding="base64", value=base64.b64encode(snapshot).decode("ascii"))
        return view
    try:
        view.update(encoding="json", value=json.loads(text))
    except ValueError:
        view.update(encoding="text", value=text)
    return view


def _result_value(result: str | None) -> Any:
    if result is None:
        return None
    try:
        return json.loads(result)
    except ValueError:
        return result


def record_document(record: InboxRecord, now: float) -> dict[str, Any]:
    """Every field of a record, JSON-ready (the payload decoded as `payload_view` does)."""
    lease = record.lease_expires_at
    return {
        "consumer": record.consumer,
        "message_key": record.message_key,
        "pk": record.pk,
        "status": record.status.value,
        "attempts": record.attempts,
        "error_code": record.error_code,
        "last_error": record.last_error,
        "fingerprint": record.fingerprint,
        "source": record.source,
        "delivery_id": record.delivery_id,
        "owner": record.owner,
        "result": _result_value(record.result),
        "completed_at": record.completed_at,
        "failed_at": record.failed_at,
        "dead_lettered_at": record.dead_lettered_at,
        "open_since": record.open_since,
        "lease_expires_at": utc_iso(lease) if lease is not None else None,
        "lease_expired": (
            record.lease_expired(now) if record.status is Status.IN_PROGRESS else None
        ),
        "expires_at": record.expires_at,
        "expired": not record.is_live(now),
        "payload": (
            payload_view(record.payload_snapshot, truncated=record.payload_truncated)
            if record.payload_snapshot is not None
            else None
        ),
    }


def state_label(record: InboxRecord, now: float) -> Text:
    if record.status is Status.IN_PROGRESS and record.lease_expired(now):
        return Text("LEASE EXPIRED", style="bold magenta")
    return Text(record.status.value, style=STATUS_STYLES[record.status])


def record_view(record: InboxRecord, now: float) -> RenderableType:
    """`show`: a record as a labelled list, its stored payload below."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")

    def row(label: str, value: str | Text | None) -> None:
        text = value if isinstance(value, Text) else Text(value or "")
        if text.plain:
            grid.add_row(label, text)

    row("consumer", record.consumer)
    row("message key", record.message_key)
    row("status", state_label(record, now))
    row("error code", Text(record.error_code or "", style="red"))
    row("last error", record.last_error)
    row("attempts", str(record.attempts) if record.attempts else None)
    row("failed", moment(record.failed_at, now))
    row("dead-lettered", moment(record.dead_lettered_at, now))
    row("completed", moment(record.completed_at, now))
    if record.lease_expires_at is not None:
        lease = moment(utc_iso(record.lease_expires_at), now)
        if record.status is Status.IN_PROGRESS and record.lease_expired(now):
            lease += "  expired: the next delivery may claim it"
        row("lease expires", lease)
    row("owner", record.owner)
    lease_iso = utc_iso(record.lease_expires_at) if record.lease_expires_at is not None else None
    if record.open_since not in (record.failed_at, lease_iso):
        row("open since", moment(record.open_since, now))
    if record.expires_at is not None:
        expiry = moment(utc_iso(record.expires_at), now)
        if not record.is_live(now):
            expiry += "  expired: treated as absent (TTL deletion pending)"
        row("expires", expiry)
    row("fingerprint", record.fingerprint)
    row("source", record.source)
    row("delivery id", record.delivery_id)
    row("result", record.result)
    row("inbox pk", record.pk)
    parts: list[RenderableType] = [grid]
    if record.payload_snapshot is not None:
        parts.append(payload_panel(record.payload_snapshot, truncated=record.payload_truncated))
    return Group(*parts)


def payload_panel(snapshot: bytes, *, truncated: bool) -> Panel:
    view = payload_view(snapshot, truncated=truncated)
    title = f"stored payload ({view['encoding']}, {view['bytes']} bytes"
    title += ", truncated)" if truncated else ")"
    body: RenderableType
    if view["encoding"] == "json":
        body = JSON.from_data(view["value"], indent=2)
    else:
        body = Text(str(view["value"]))
    return Panel(body, title=title, title_align="left", expand=False)


def failed_table(records: Sequence[InboxRecord], now: float) -> Table:
    table = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("age", min_width=7)
    table.add_column("consumer", overflow="fold")
    table.add_column("message key", overflow="fold")
    table.add_column("state")
    table.add_column("error", ratio=1, overflow="fold")
    for record in records:
        since = epoch_of(record.open_since)
        state = state_label(record, now)
        if record.attempts:
            state.append(f"\n{record.attempts} attempt{'s' if record.attempts != 1 else ''}", "dim")
        error = Text(record.error_code or "", style="red")
        if record.last_error:
            error.append("\n" if record.error_code else "")
            error.append(clip(" ".join(record.last_error.split()), ERROR_CHARS), "default")
        table.add_row(
            Text(relative(since, now) if since is not None else "?"),
            Text(record.consumer),
            Text(record.message_key),
            state,
            error,
        )
    return table


# ---- stats --------------------------------------------------------------------------------------


def stats_view(
    table_name: str,
    items: int,
    summary: OpenSummary,
    queues: Sequence[Mapping[str, Any]],
    now: float,
) -> RenderableType:
    parts: list[RenderableType] = [
        Text.assemble(
            ("table ", "bold"),
            table_name,
            f": about {items:,} records (DescribeTable's ItemCount, updated every ~6 hours)",
        )
    ]
    counts = Table(title="open records", title_justify="left", header_style="bold")
    counts.add_column("consumer")
    counts.add_column("FAILED", justify="right", style="red")
    counts.add_column("IN_PROGRESS", justify="right")
    counts.add_column("lease expired", justify="right", style="magenta")
    for consumer, count in summary.consumers.items():
        counts.add_row(
            Text(consumer), str(count.failed), str(count.in_progress), str(count.lease_expired)
        )
    total = summary.total
    counts.add_section()
    counts.add_row(
        Text("total", style="bold"),
        str(total.failed),
        str(total.in_progress),
        str(total.lease_expired),
    )
    parts.append(counts)
    oldest = summary.oldest
    if oldest is None:
        parts.append(Text("nothing needs attention: no FAILED records, no expired leases"))
    else:
        parts.append(
            Text.assemble(
                ("oldest open: ", "bold"),
                f"{oldest.consumer} {oldest.message_key} ",
                state_label(oldest, now),
                f" since {moment(oldest.open_since, now)}",
            )
        )
    if queues:
        depths = Table(title="queues", title_justify="left", header_style="bold")
        depths.add_column("queue")
        depths.add_column("visible", justify="right")
        depths.add_column("in flight", justify="right")
        depths.add_column("delayed", justify="right")
        for queue in queues:
            depths.add_row(
                Text(str(queue["queue"])),
                Text(str(queue["visible"]), style="bold red" if queue["visible"] else ""),
                str(queue["in_flight"]),
                str(queue["delayed"]),
            )
        parts.append(depths)
    return Group(*parts)


def oldest_document(summary: OpenSummary, now: float) -> dict[str, Any] | None:
    oldest = summary.oldest
    if oldest is None:
        return None
    since = epoch_of(oldest.open_since)
    return {
        "consumer": oldest.consumer,
        "message_key": oldest.message_key,
        "status": oldest.status.value,
        "error_code": oldest.error_code,
        "open_since": oldest.open_since,
        "age_seconds": round(now - since, 3) if since is not None else None,
    }


# ---- redrive ------------------------------------------------------------------------------------


MODES = {"native": "SQS message move task", "client": "client-side mover"}


def progress_label(report: MoveReport) -> str:
    if report.dry_run:
        return f"would move {len(report.would_move)} · skipped {report.skipped}"
    return f"moved {report.moved} · skipped {report.skipped} · failed {report.failed}"


def preview_table(report: MoveReport) -> Table:
    table = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("message id", min_width=8, overflow="fold")
    table.add_column("inbox-error-code", min_width=8, style="red", overflow="fold")
    table.add_column("inbox-message-key", min_width=8, overflow="fold")
    table.add_column("body", overflow="fold")
    for preview in report.would_move:
        table.add_row(
            Text(preview.message_id),
            Text(preview.error_code or "-"),
            Text(preview.message_key or "-"),
            Text(preview.body_preview),
        )
    return table


def redrive_summary(report: MoveReport, source: str, destination: str) -> Text:
    if report.dry_run:
        return Text(
            f"dry run: would move {len(report.would_move)} from {source} to {destination}, "
            f"skipped {report.skipped}; nothing was moved"
        )
    style = "green" if report.ok else "bold red"
    text = Text(
        f"moved {report.moved}, skipped {report.skipped}, failed {report.failed}"
        f" ({source} -> {destination}, {MODES.get(report.mode, report.mode)})",
        style=style,
    )
    if report.status not in (None, "COMPLETED"):
        text.append(f"; task {report.status}")
    return text


def reap_table(summary: ReapSummary) -> Table:
    """One reaper pass, per consumer and in total."""
    verb = "would " if summary.dry_run else ""
    table = Table(
        title=f"reaper pass{' (dry run: nothing changed)' if summary.dry_run else ''}",
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
    )
    for column in (
        "consumer",
        "open",
        "in progress",
        "failed",
        f"{verb}reap",
        f"{verb}dead-letter",
        "oldest open",
    ):
        table.add_column(column, justify="left" if column == "consumer" else "right")
    for name, counts in sorted(summary.consumers.items()):
        table.add_row(
            name,
            str(counts.open),
            str(counts.in_progress),
            str(counts.failed),
            str(counts.reaped),
            str(counts.dead_lettered),
            span(counts.oldest_open_age_seconds) if counts.open else "-",
        )
    table.add_row(
        "total",
        str(summary.open),
        "",
        "",
        str(summary.reaped),
        str(summary.dead_lettered),
        span(summary.oldest_open_age_seconds) if summary.open else "-",
        style="bold",
    )
    if not summary.complete:
        table.caption = "stopped before the end; run again to continue"
    if summary.undeliverable:
        table.caption = (
            f"{summary.undeliverable} FAILED record(s) have no dead-letter queue: pass --dlq"
        )
    return table
