"""What every `lambda-inbox` command shares: its options, its session (output, AWS clients,
errors turned into messages and exit codes) and the registry the commands are declared in."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType, ModuleType
from typing import Annotated, Any, TypeVar

import typer

from ..aws import Aws, CliError, UsageProblem
from ..aws import translated as translated_errors
from .records import (
    parse_duration,
)
from .render import (
    Output,
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


class Commands:
    """The commands of the app, declared where they are written (`@command(...)`) and installed
    on the Typer app by `cli.app`, so no command module imports the app."""

    def __init__(self) -> None:
        self.declared: list[tuple[Callable[..., Any], dict[str, Any]]] = []

    def __call__(self, name: str | None = None, **options: Any) -> Callable[[F], F]:
        def declare(function: F) -> F:
            self.declared.append((function, {"name": name, **options}))
            return function

        return declare

    def names(self) -> set[str]:
        """The command names, as Typer derives them (a function's name with dashes)."""
        return {
            options["name"] or function.__name__.replace("_", "-")
            for function, options in self.declared
        }

    def install(self, app: typer.Typer, modules: Sequence[ModuleType]) -> None:
        """Install the commands module by module in the order given (the order of `--help`)."""
        rank = {module.__name__: n for n, module in enumerate(modules)}
        for function, options in sorted(
            self.declared, key=lambda declared: rank[declared[0].__module__]
        ):
            app.command(**options)(function)


F = TypeVar("F", bound=Callable[..., Any])
command = Commands()


class Stop(threading.Event):
    """Set by the first SIGINT or SIGTERM while `graceful`: a long command stops at its
    next safe point, between SQS calls, so it settles every message it received. Otherwise
    (e.g. SQS's move task, which is then cancelled, or a second signal) the signal interrupts."""

    graceful = False


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[Stop]:
    """SIGTERM stops a long command (redrive, kafka-replay) like Ctrl-C (see `Stop`)."""
    stop = Stop()

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
