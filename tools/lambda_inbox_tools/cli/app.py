"""The `lambda-inbox` app (Typer): the commands declared in `inspect_commands`, `reap_command`,
`redrive_command` and `local_command`, output in `render`, the dead-letter mover in
`lambda_inbox_tools.redrive`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated

import typer

from . import (
    inspect_commands,
    local_command,
    reap_command,
    redrive_command,
    replay_command,
    send_command,
)
from .common import command

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

# Importing these declared their commands in `command`; `--help` lists them in this order.
command.install(
    app,
    (
        inspect_commands,
        reap_command,
        redrive_command,
        replay_command,
        send_command,
        local_command,
    ),
)


def run(argv: Sequence[str] | None = None) -> int:
    """Run the app; returns the exit status instead of exiting."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and not args[0].startswith("-") and args[0] not in command.names():
        print(
            f"No such command {args[0]!r}. To read one inbox record: "
            "lambda-inbox show CONSUMER KEY; every command: lambda-inbox --help",
            file=sys.stderr,
        )
        return 2
    try:
        app(args=args, prog_name="lambda-inbox")
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        return code if isinstance(code, int) else 1
    return 0


def _version(value: bool) -> None:
    if value:
        from lambda_inbox import __version__

        typer.echo(f"lambda-inbox {__version__}")
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
