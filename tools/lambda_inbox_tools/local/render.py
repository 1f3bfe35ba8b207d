"""The terminal side of `lambda-inbox local`: live progress, the report, or one JSON document."""

from __future__ import annotations

import json
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from .backends import BackendError
from .options import Options
from .report import Report
from .run import run
from .template import TemplateError
from .workloads import WorkloadDoesNotFit


def _progress(rows: list[tuple[str, str]]) -> Table:
    table = Table(title="event sources", show_header=False, box=None, pad_edge=False)
    for label, value in rows:
        table.add_row(label, value)
    return table


def print_report(console: Console, report: Report) -> None:
    """The run's facts, the workload's summary lines, its checks and the verdict."""
    d = report.document
    console.print()
    functions = d["invoke_endpoint"] or "in-process"
    console.print(
        f"[bold]report[/bold] ({d['seconds']} s; functions {functions}; "
        f"DynamoDB {d['dynamodb']} {d['dynamodb_endpoint']})"
    )
    table = Table(show_header=False, box=None)
    for name, value in report.summary:
        table.add_row(name, value)
    console.print(table)
    console.print("[bold]invariants[/bold]")
    for check in report.checks:
        mark = "[green]ok[/green]  " if check.ok else "[red]FAIL[/red]"
        console.print(f"  {mark} {check.name}: {check.detail}")
    console.print(
        "[green]every effect happened once per event[/green]"
        if report.ok
        else "[red]AN INVARIANT IS BROKEN[/red]"
    )


def run_with_display(options: Options, *, json_output: bool, stdout: TextIO) -> int:
    """The run with its display; the exit status: 0 done (every invariant held), 1 failed
    (an invariant, a service), 2 a template it cannot use, 130 interrupted before the end."""
    console = Console(file=stdout, stderr=False, highlight=False)
    messages = Console(stderr=True, highlight=False) if json_output else console

    def say(text: str) -> None:  # never wrapped: the printed commands are copied as they are
        messages.print(text, soft_wrap=True)

    try:
        if json_output:
            report = run(options, say=say)
        else:
            with Live(_progress([]), console=console, refresh_per_second=2) as live:

                def update(rows: list[tuple[str, str]]) -> None:
                    live.update(_progress(rows))

                def say_live(text: str) -> None:
                    live.console.print(text, soft_wrap=True)

                report = run(options, say=say_live, live=update)
    except (TemplateError, WorkloadDoesNotFit) as error:
        text = str(error)
        text = text if str(options.template) in text else f"{options.template}: {text}"
        messages.print(f"error: {text}", markup=False, soft_wrap=True)
        return 2
    except BackendError as error:
        messages.print(f"error: {error}", markup=False, soft_wrap=True)
        return 1
    except KeyboardInterrupt:
        messages.print("interrupted: everything this run started is stopped")
        return 130
    if report.document.get("demo") is False:
        return 0  # another template: it ran until stopped, there is nothing to report
    if json_output:
        stdout.write(json.dumps(report.document, indent=2, default=_plain) + "\n")
    else:
        print_report(console, report)
    return 0 if report.ok else 1


def _plain(value: Any) -> Any:
    return str(value)
