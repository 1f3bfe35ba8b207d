"""`local` (the local stack of a SAM template) and `create-table`."""

from __future__ import annotations

import contextlib
import re
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Annotated

import typer

from ..aws import Failure
from .common import (
    EndpointOption,
    JsonOption,
    RegionOption,
    TableOption,
    command,
    require_table,
    session,
)

# ---- local, create-table ------------------------------------------------------------------------


@command(
    epilog="Example: lambda-inbox local --workload devkit.demo.plugin:WORKLOAD (what `make demo` runs)",
)
def local(
    keep_running: Annotated[
        bool,
        typer.Option(
            "--keep-running",
            help="Keep the stack up after the report (Ctrl-C, SIGTERM or SIGHUP stops it).",
        ),
    ] = False,
    demo: Annotated[
        bool | None,
        typer.Option(
            "--demo/--no-demo",
            help="Run the demo workload and its report (default: when an installed workload "
            "fits the template, as this repository's demo fits its template).",
            show_default=False,
        ),
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(
            "--workload",
            metavar="MODULE:ATTR",
            help="The workload to run (instead of the installed ones), e.g. devkit.demo.plugin:WORKLOAD "
            "in this repository (what `make demo` runs).",
        ),
    ] = None,
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
    """Run a SAM template's tables, queues and event sources on local services.

    DynamoDB Local, SQS on a moto server and Kafka on librdkafka's mock cluster; tables, queues,
    topics and event sources come from the template (any SAM template). When a workload fits
    the template (--workload, or one an installed distribution registers: this repository's demo
    for its own template) it runs through the stack and the report says whether every invariant
    held (exit 0 only then); else the stack starts and keeps running until Ctrl-C, SIGTERM or
    SIGHUP, printing the exports and commands that reach it.

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
            f"lambda-inbox local needs the local extra ({error.name} missing): "
            "pip install 'lambda-inbox[local]'"
        )
        raise typer.Exit(2) from None
    from ..local.options import Options
    from ..local.workloads import load

    if workload is not None:
        try:
            load(workload)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--workload") from None

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
        demo=demo,
        workload=workload,
    )
    with _signals_interrupt():
        status = run_with_display(options, json_output=json_output, stdout=sys.stdout)
    raise typer.Exit(status)


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP stop the stack like Ctrl-C: every process it started is stopped
    (DynamoDB Local, servers, pollers) before the command exits."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        for number in SIGNALS:  # stopping: a second signal must not cut the cleanup short
            signal.signal(number, signal.SIG_IGN)
        raise KeyboardInterrupt

    try:
        previous = {number: signal.signal(number, interrupt) for number in SIGNALS}
    except ValueError:  # not the main thread (an in-process caller): leave signals alone
        yield
        return
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@command(
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

    from lambda_inbox.store import create_inbox_table

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
