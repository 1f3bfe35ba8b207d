"""`lambda-inbox local` from start to report: the template read, the workload that fits it
chosen (workloads.py), the stack up, then the workload driven through it to its report, or the
stack kept running until a signal.

Function logs (Powertools JSON lines, metrics) go to `.cache/local/functions.log` while the
progress display and the report go to the terminal.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from .function_logs import function_logs
from .keep_running import keep_running
from .options import Options
from .progress import progress_rows
from .report import Report
from .retention import refuse_short_retention
from .settle import wait_until_settled
from .stack import LocalStack, read_local_stack, running_stack
from .workloads import Driving, fitting


def run(options: Options, *, say: Callable[[str], None], live: Any = None) -> Report:
    """The whole run; `live(rows)` is called with the progress rows about twice a second."""
    started = time.monotonic()
    deadline = started + options.duration
    log_path = options.template.resolve().parent / ".cache" / "local" / "functions.log"

    # Read the template first: one that cannot be used fails before any service starts, and
    # whether a workload runs (with what it starts beside the stack) is known before anything
    # starts for it.
    planned = read_local_stack(
        options.template, sqs_endpoint="http://127.0.0.1:4566", parameters=options.parameters
    )
    refuse_short_retention(planned)  # a message its inbox forgot would be applied twice
    workload, drive = fitting(planned, options)
    samples = workload.sample_bodies() if workload is not None else {}
    with contextlib.ExitStack() as stack:
        session = stack.enter_context(workload.session(options)) if workload and drive else None
        stack.enter_context(function_logs(log_path))
        local = stack.enter_context(
            running_stack(
                options.template,
                backend=options.backend,
                scale=options.scale,
                invoke_endpoint=options.invoke_endpoint,
                parameters=options.parameters,
                local_defaults=session.parameters if session else None,
                dynamodb_endpoint=options.dynamodb_endpoint,
                sqs_endpoint=options.sqs_endpoint,
                stack_name=options.stack_name,
                say=say,
            )
        )
        _say_stack(local, options, say, log_path=str(log_path))
        if session is None:  # no workload for this template: the stack, up until a signal
            local.start()
            keep_running(local, say, samples)
            return Report({"demo": False, "ok": True, "seconds": _since(started)})

        def tick() -> None:
            if live is not None:
                live(progress_rows(local))

        def settle(done: Callable[[], bool], grace: float) -> bool:
            settled = wait_until_settled(local, deadline + grace, done, tick)
            tick()
            return settled

        say(session.describe())
        elapsed = lambda: time.monotonic() - started  # noqa: E731
        report = session.drive(Driving(local, options, settle, elapsed))
        if options.keep_running:
            keep_running(local, say, samples)
    return report


def _say_stack(
    local: LocalStack, options: Options, say: Callable[[str], None], *, log_path: str
) -> None:
    sqs_kind = "given endpoint" if options.sqs_endpoint else "moto server"
    say(
        f"DynamoDB ({local.endpoints.dynamodb_backend}): {local.endpoints.dynamodb}   "
        f"SQS ({sqs_kind}): {local.endpoints.sqs}   Kafka (mock cluster): "
        f"{local.endpoints.kafka_bootstrap or '- (no Kafka event sources)'}"
    )
    say(
        "functions: "
        + (f"through {options.invoke_endpoint}" if options.invoke_endpoint else "in-process")
    )
    say(
        f"from {options.template.name}: {len(local.stack.tables)} tables, "
        f"{len(local.stack.queues)} queues, topics {', '.join(local.stack.topics) or '-'}, "
        f"{len(local.runners())} event sources; function logs "
        + ("where the endpoint writes them" if options.invoke_endpoint else f"in {log_path}")
    )
    for skipped in local.skipped:
        say(f"not run locally: {skipped}")


def _since(started: float) -> float:
    return round(time.monotonic() - started, 1)
