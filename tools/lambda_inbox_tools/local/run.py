"""`lambda-inbox local` from start to report: the stack up, the workload through it, the report.

Function logs (Powertools JSON lines, metrics) go to `.cache/local/functions.log` while the
progress display and the report go to the terminal.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .kafka_poller import KafkaPoller
from .report import Report, build_report
from .stack import LocalStack, read_local_stack, running_stack
from .stream_poller import ShardPoller
from .template import (
    DEFAULT_STACK_NAME,
    FunctionSpec,
    KafkaEventSpec,
    KinesisEventSpec,
    Stack,
    StreamEventSpec,
    TableSpec,
)
from .workload import Workload, running_webhook

SETTLE_SECONDS = 2.0


@dataclass
class Options:
    template: Path
    messages: int = 40
    duration: float = 90.0
    seed: int = 7
    backend: str = "dynamodb-local"
    scale: float = 1 / 30
    invoke_endpoint: str | None = None
    keep_running: bool = False
    parameters: dict[str, str] = field(default_factory=dict)
    #: Services already running, used instead of starting DynamoDB Local / the moto server.
    dynamodb_endpoint: str | None = None
    sqs_endpoint: str | None = None
    #: Where the demo's webhook receiver listens (containers reach the host at the bridge).
    webhook_host: str = "127.0.0.1"
    webhook_port: int = 0
    #: Resources are named `{stack_name}-{LogicalId}` (several stacks can share the services).
    stack_name: str = DEFAULT_STACK_NAME
    #: The demo workload and its report: None runs them for this repository's template only.
    demo: bool | None = None


#: What the demo workload drives: this repository's example application.
EXAMPLE_RESOURCES = frozenset(
    {"InboxTable", "DomainTable", "OrderEventsQueue", "PaymentReplayQueue", "NotificationQueue"}
)


class NotTheExampleApplication(Exception):
    """`--demo` was asked for a template that is not this repository's example application."""


def is_example_application(stack: Stack) -> bool:
    names = {table.logical_id for table in stack.tables} | {q.logical_id for q in stack.queues}
    return names >= EXAMPLE_RESOURCES


@contextlib.contextmanager
def function_logs(path: Path) -> Iterator[TextIO]:
    """sys.stdout -> `path` while the block runs (what in-process functions print)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    terminal = sys.stdout
    with path.open("w", encoding="utf-8") as log:
        sys.stdout = log
        try:
            yield terminal
        finally:
            sys.stdout = terminal


def progress_rows(local: LocalStack) -> list[tuple[str, str]]:
    rows = []
    for poller in local.sqs_pollers:
        s = poller.stats
        rows.append(
            (
                poller.label,
                f"{s.invocations} invocations, {s.records} records, {s.deleted} deleted, "
                f"{s.failed_records} back to the queue, {s.failed_invocations} failed",
            )
        )
    for kafka in local.kafka_pollers:
        k = kafka.stats
        rows.append(
            (
                kafka.label,
                f"{k.invocations} invocations, {k.records} records, {k.committed} committed, "
                f"{k.retried_records} retried, {k.failed_invocations} failed",
            )
        )
    for stream in local.stream_pollers:
        d = stream.stats
        rows.append(
            (
                stream.label,
                f"{d.invocations} invocations, {d.records} records, {d.filtered_out} filtered "
                f"out, {d.retried_records} retried, {d.given_up_batches} batches given up",
            )
        )
    for scheduler in local.schedulers:
        rows.append((scheduler.label, f"{scheduler.stats.invocations} runs"))
    for dlq, _ in local.stack.redrive_pairs():
        rows.append((dlq.name, f"{local.queue_depth(dlq.url)} messages"))
    return rows


def wait_until_settled(
    local: LocalStack, deadline: float, done: Callable[[], bool], tick: Callable[[], None]
) -> bool:
    """Until nothing is pending (twice in a row, SETTLE_SECONDS apart) and `done()`."""
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        tick()
        if local.pending() == 0 and done():
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= SETTLE_SECONDS:
                return True
        else:
            quiet_since = None
        time.sleep(0.5)
    return False


def run(options: Options, *, say: Callable[[str], None], live: Any = None) -> Report:
    """The whole run; `live(rows)` is called with the progress rows about twice a second."""
    started = time.monotonic()
    deadline = started + options.duration
    log_path = options.template.resolve().parent / ".cache" / "local" / "functions.log"

    def tick() -> None:
        if live is not None:
            live(progress_rows(local))

    # Read the template first: one that cannot be used fails before any service starts, and
    # whether the demo runs (with its webhook receiver) is known before anything starts for it.
    planned = read_local_stack(
        options.template,
        sqs_endpoint="http://127.0.0.1:4566",
        parameters=options.parameters,
        local_defaults={"NotifyWebhookUrl": "http://127.0.0.1/notify"},
    )
    demo = is_example_application(planned) if options.demo is None else options.demo
    if demo and not is_example_application(planned):
        missing = ", ".join(sorted(EXAMPLE_RESOURCES - _logical_ids(planned)))
        raise NotTheExampleApplication(
            f"the demo workload needs this repository's template (missing: {missing})"
        )
    workload: Workload
    with contextlib.ExitStack() as stack:
        receiver_holder = stack.enter_context(running_webhook_for(options)) if demo else None
        stack.enter_context(function_logs(log_path))
        local = stack.enter_context(
            running_stack(
                options.template,
                backend=options.backend,
                scale=options.scale,
                invoke_endpoint=options.invoke_endpoint,
                parameters=options.parameters,
                local_defaults={"NotifyWebhookUrl": receiver_holder.url}
                if receiver_holder
                else None,
                dynamodb_endpoint=options.dynamodb_endpoint,
                sqs_endpoint=options.sqs_endpoint,
                stack_name=options.stack_name,
                say=say,
            )
        )
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
        if receiver_holder is None:  # another team's template: the stack, up until a signal
            local.start()
            keep_running(local, say)
            return Report({"demo": False, "ok": True, "seconds": _since(started)})
        say(f"the demo workload; its webhook receiver {receiver_holder.url}")
        workload = Workload(local, messages=options.messages, seed=options.seed)
        receiver_holder.transient_keys = set(workload.webhook.transient_keys)
        workload.webhook = receiver_holder
        workload.inject_crashes()
        local.start()
        workload.publish()
        reaped = lambda: any(  # noqa: E731
            isinstance(r, dict) and r.get("dead_lettered", 0) > 0
            for s in local.schedulers
            for r in s.stats.responses
        )
        wait_until_settled(local, deadline, reaped, tick)
        workload.fix_and_redrive()
        wait_until_settled(local, deadline + 30, lambda: True, tick)
        tick()
        report = build_report(workload, time.monotonic() - started)
        if options.keep_running:
            keep_running(local, say)
    return report


@contextlib.contextmanager
def running_webhook_for(options: Options) -> Iterator[Any]:
    from .workload import WebhookReceiver

    receiver = WebhookReceiver(set())
    with running_webhook(receiver, options.webhook_host, options.webhook_port):
        yield receiver


#: A sample message for this repository's order queue (other templates get an empty object).
SAMPLE_ORDER = (
    """{"event_id": "evt-mine-1", "order_id": "ord-mine-1", "customer_id": "cust-001", """
    """"lines": [{"sku": "SKU-RED-MUG", "qty": 1}], "total_cents": 1200}"""
)


def keep_running_hints(local: LocalStack) -> list[str]:
    """The shell lines to talk to the running stack, for any template. DynamoDB and SQS listen
    on different endpoints, so they are exported per service (`AWS_ENDPOINT_URL_DYNAMODB`,
    `AWS_ENDPOINT_URL_SQS`), which lambda-inbox, the SDKs and AWS CLI v2 read. AWS CLI v1 reads
    only the DynamoDB one, so every `aws sqs` line also names its `--endpoint-url`, and
    `lambda-inbox send` needs no AWS CLI at all."""
    stack, sqs = local.stack, local.endpoints.sqs
    lines = [
        "export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing",
        "export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1",
        f"export AWS_ENDPOINT_URL_DYNAMODB={local.endpoints.dynamodb}",
        f"export AWS_ENDPOINT_URL_DYNAMODB_STREAMS={local.endpoints.dynamodb}",
        f"export AWS_ENDPOINT_URL_SQS={sqs}",
    ]
    if local.endpoints.kafka_bootstrap:
        lines.append(f"export KAFKA_BOOTSTRAP_SERVERS={local.endpoints.kafka_bootstrap}")
    if stack.kinesis_streams:
        lines.append(f"export AWS_ENDPOINT_URL_KINESIS={sqs}")
    inbox = next((t for t in stack.tables if "open-records" in _indexes(t)), None)
    if inbox is not None:
        lines.append(f"export INBOX_TABLE={inbox.name}")
    polled = {poller.queue.logical_id for poller in local.sqs_pollers}
    for queue in stack.queues:
        if queue.logical_id not in polled:
            continue
        body = SAMPLE_ORDER if queue.logical_id == "OrderEventsQueue" else "{}"
        lines.append(f"lambda-inbox send --queue {queue.name} --body '{body}'")
        lines.append(
            f"aws sqs send-message --endpoint-url {sqs} --queue-url {queue.url} "
            f"--message-body '{body}'"
        )
    for stream in stack.kinesis_streams:
        lines.append(f"lambda-inbox send --stream {stream.name} --key k-1 --body '{{}}'")
        lines.append(
            f"aws kinesis put-record --endpoint-url {sqs} --stream-name {stream.name} "
            "--partition-key k-1 --cli-binary-format raw-in-base64-out --data '{}'"
        )
    for topic in stack.topics:
        lines.append(
            f"lambda-inbox send --topic {topic} --bootstrap-servers "
            "$KAFKA_BOOTSTRAP_SERVERS --body '{}'"
        )
    lines += [f"aws dynamodb scan --table-name {table.name}" for table in stack.tables]
    if inbox is not None:
        lines += ["lambda-inbox stats", "lambda-inbox failed"]
    lines += [
        f"lambda-inbox redrive --from {dlq.name} --to {source.name} --client-side"
        for dlq, source in stack.redrive_pairs()
    ]
    return lines + replay_hints(local)


def replay_hints(local: LocalStack) -> list[str]:
    """One `lambda-inbox replay` per on-failure destination of a Kafka or stream event source
    that is a queue here: from it, to a queue that feeds the function again (another of its
    SQS event sources, else a queue its environment names), else to a queue the operator picks."""
    lines: list[str] = []
    sources: list[tuple[FunctionSpec, KafkaEventSpec | StreamEventSpec | KinesisEventSpec]] = [
        (p.function, p.event) for p in local.kafka_pollers
    ] + [(p.function, p.event) for p in local.stream_pollers]
    for function, event in sources:
        failures = next((q for q in local.stack.queues if q.arn == event.on_failure_arn), None)
        if failures is None:
            continue
        lines.append(f"# what {function.logical_id}.{event.name} gave up on, replayed:")
        target = _feeding_queue(local, function)
        # A DynamoDB stream consumer that also reads a queue takes its records again there; one
        # that does not (the outbox relay) takes the outbox items in them.
        records = isinstance(event, StreamEventSpec) and any(
            poller.function is function for poller in local.sqs_pollers
        )
        flag = " --stream-records" if records else ""
        lines.append(f"lambda-inbox replay --from {failures.name} --to {target}{flag}")
    return lines


def _feeding_queue(local: LocalStack, function: FunctionSpec) -> str:
    for poller in local.sqs_pollers:
        if poller.function is function:
            return poller.queue.name
    # A queue its environment names, but not its dead-letter queue: poison goes there, not work.
    dead_letters = function.environment.get("DEAD_LETTER_QUEUE_URL")
    named = [
        q.name
        for q in local.stack.queues
        if q.url in function.environment.values() and q.url != dead_letters
    ]
    return named[0] if len(named) == 1 else "<QUEUE>"


def _indexes(table: TableSpec) -> set[str]:
    return {str(index.get("IndexName")) for index in table.global_secondary_indexes}


def _logical_ids(stack: Stack) -> set[str]:
    return {t.logical_id for t in stack.tables} | {q.logical_id for q in stack.queues}


def _since(started: float) -> float:
    return round(time.monotonic() - started, 1)


class ErrorEcho:
    """Says on the console what the event sources record as errors (a failed invocation, a
    backend that refuses a read): each new error once, with its event source, and an error
    that keeps coming back once every `REPEAT_SECONDS` with its count."""

    REPEAT_SECONDS = 30.0

    def __init__(self, local: LocalStack, say: Callable[[str], None]) -> None:
        self.local, self.say = local, say
        self._seen: dict[int, int] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self._said: dict[tuple[str, str], tuple[float, int]] = {}
        self._given_up: dict[int, int] = {}

    def __call__(self) -> None:
        now = time.monotonic()
        pollers: list[KafkaPoller | ShardPoller] = [
            *self.local.kafka_pollers,
            *self.local.stream_pollers,
        ]
        for poller in pollers:
            given_up = poller.stats.given_up_batches
            if given_up > self._given_up.get(id(poller), 0):
                where = poller.destination.url or "nowhere (no on-failure queue here)"
                self.say(
                    f"{poller.label}: gave up on a batch ({given_up} so far); its on-failure "
                    f"record is in {where.rsplit('/', 1)[-1]}"
                )
                self._given_up[id(poller)] = given_up
        for runner in self.local.runners():
            errors = runner.stats.errors
            start = self._seen.get(id(errors), 0)
            self._seen[id(errors)] = len(errors)
            for error in errors[start:]:
                key = (runner.label, error)
                self._counts[key] = self._counts.get(key, 0) + 1
        for key, count in self._counts.items():
            said_at, said_count = self._said.get(key, (0.0, 0))
            if said_count == 0:
                self.say(f"{key[0]}: {key[1]}")
            elif count > said_count and now - said_at >= self.REPEAT_SECONDS:
                self.say(f"{key[0]}: {key[1]} (again: {count - said_count} more times)")
            else:
                continue
            self._said[key] = (now, count)


def keep_running(local: LocalStack, say: Callable[[str], None]) -> None:
    """Print the endpoints and the commands to try, then wait for Ctrl-C (SIGTERM and SIGHUP
    too: the command line turns them into the same interrupt), saying what the event sources
    record as errors meanwhile."""
    say("the stack keeps running (Ctrl-C, SIGTERM or SIGHUP stops it); in another shell:")
    for line in keep_running_hints(local):
        say(f"  {line}")
    echo = ErrorEcho(local, say)
    try:
        while True:
            time.sleep(1)
            echo()
    except KeyboardInterrupt:
        say("stopping: pollers, functions and every service this command started")
