"""One check that a consumer is effectively-once: `check_effectively_once`.

It plays the event source against the handler with what brokers, Lambda and DynamoDB really do,
drawn from a seeded random generator (a failure names its seed, so it reproduces). Every run,
whatever the draws:

- **AWS's rule for a handler's return** (`lambda_inbox_tools.batch_responses`, the one the
  local stack's pollers use): with `ReportBatchItemFailures`, None, `{}` and
  `{"batchItemFailures": []}` acknowledge the whole batch, an exception or a malformed response
  fails all of it; without it the response is not read. The function's own event source
  mapping (`check.mapping`): its template's `BatchSize`, `FunctionResponseTypes` and
  `ParallelizationFactor`, the arguments overriding them.
- **The sources** (`check.sources`): SQS standard in any order, duplicates, what fails again;
  FIFO groups, Kafka partitions and stream shards (partition keys, items, under
  `ParallelizationFactor`) each in AWS's order and again from their first failure, nothing
  across them (the first batch begins with a later message of another group), every lane
  rewound once; a message under a new id (a producer's retry serialized again, SNS's
  redelivery); a FIFO response acknowledging after a failure in its group named.
- **Faults in writes** (`crashes.CrashSwitch`, `check.schedule`): each kind (a crash just
  before or after a write, a failed write, DynamoDB's own failure of it, a lost answer the SDK
  sends again) at the first write of an invocation of new work, and at a write of 2..W that
  moves with the seed, W the writes a message makes; then drawn at `crash_rate`.
- **Concurrency** (`check.overlap`, `check.dynamodb.stale`): two invocations holding the same
  messages, twice a run, on every source; reads without `ConsistentRead` that miss the last
  second's writes.
- **Time** (`check.sources.late`, `check.clock`, `check.dynamodb.expiry`): two late
  redeliveries within `redrive_window`, TTL and `ClientRequestToken`s forgotten first.
- **What is owed, kept** (`check.sources.owed`): what a run still owes played at its end, the
  effects of the messages under observation witnessed first.

See docs/testing.md, "The effectively-once check", for the guarantee in numbers and what it
cannot see.

A handler whose DynamoDB writes the check cannot reach (a plain function without `clients`) is
refused at its first write, naming `clients`; one that writes nothing needs none. When every
message is acknowledged, the effects the test names (`effects()`, one entry per effect that
happened, or a mapping key -> count) must hold each message key (`key(record)`) exactly once, and
nothing else. A key of None says the message must cause no effect (a poison or rejected
message). A failure is a `NotEffectivelyOnce` carrying the `Report` (`check.report`).
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from .check.clock import CheckClock
from .check.driver import Driver
from .check.dynamodb.expiry import Expiry
from .check.dynamodb.stale import StaleReads
from .check.mapping import played_settings
from .check.report import NotEffectivelyOnce, Report, judge
from .check.sources.draws import Draws
from .check.sources.lanes import play_kafka, play_stream
from .check.sources.late import play_late, played_window
from .check.sources.owed import play_what_is_owed
from .check.sources.queues import play_fifo, play_sqs
from .crashes import CrashSwitch, UncoveredWrite, uncovered_writes
from .events import record_id

__all__ = ["NotEffectivelyOnce", "Report", "check_effectively_once"]

Record = Mapping[str, Any]
Effects = Callable[[], Iterable[Hashable] | Mapping[Hashable, int]]


def check_effectively_once(
    handler: Callable[[dict[str, Any], Any], Any],
    records: Sequence[Record],
    *,
    effects: Effects,
    key: Callable[[Record], Hashable | None],
    clients: Iterable[Any] | None = None,
    seed: int = 0,
    batch_size: int | None = None,
    report_batch_item_failures: bool | None = None,
    volatile: Sequence[str] = (),
    duplicate_rate: float = 0.3,
    crash_rate: float = 0.25,
    max_invocations: int | None = None,
    clock: CheckClock | None = None,
    redrive_window: timedelta | None = None,
) -> Report:
    """Drive `handler` through `records` (all SQS, Kafka, Kinesis or DynamoDB stream records, as
    the kit's `events` and `stream_events` build them) with what the event source and Lambda do
    (see the module), then check the effects. `clients`: the DynamoDB clients the handler
    writes through (a `LocalFunction`'s own unless given). `batch_size` and
    `report_batch_item_failures`: the event source mapping's `BatchSize` and
    `FunctionResponseTypes`, a `LocalFunction`'s template's unless given (`check.mapping`).
    `volatile`: the payload fields the producer stamps anew on every send (dotted paths, such
    as "sent_at"), changed in a message delivered under a new id (`check.sources.retries`).
    `clock`: the check's clock (`check.clock.CheckClock`; pass the one the consumer's
    `InboxConfig(clock=...)` holds); `redrive_window`: how late a message may come again (a
    dead-letter redrive, a replay; the inbox's default retention unless given), which the
    inbox's retention must cover
    (`check.sources.late`). Returns the report; raises `NotEffectivelyOnce` (its `report` names
    the keys lost, applied twice or unexpected) and `ValueError` for records or clients it
    cannot play."""
    source = _source(records)
    if clients is None:
        clients = getattr(handler, "clients", None)
    context = getattr(handler, "context", None)
    # A seeded generator that reproduces a run, for a test's schedule: no secret here (B311).
    rng = random.Random(seed)  # nosec B311
    switch = CrashSwitch(clients, random.Random(rng.random())) if clients else None  # nosec B311
    played = played_settings(
        handler,
        source,
        records,
        batch_size=batch_size,
        report_batch_item_failures=report_batch_item_failures,
    )
    report = Report(seed=seed, messages=len(records), settings=played)
    report.redrive_window = played_window(records, redrive_window)
    clock = clock if clock is not None else CheckClock()
    began = clock()
    draws = Draws(
        rng,
        duplicate_rate,
        has_effect=lambda record: key(record) is not None,
        report=report,
        identity=key,
        volatile=tuple(volatile),
        expected=len({key(record) for record in records}),
    )

    def witness(acknowledged: Sequence[Record]) -> None:
        now = Counter(effects())
        keys = (key(record) for record in acknowledged)
        report.lost_early.update(str(k) for k in keys if k is not None and now[k] == 0)

    draws.witness = witness

    def call(event: dict[str, Any]) -> Any:
        return handler(event, context() if callable(context) else None)

    play = {
        "sqs": play_sqs,
        "fifo": play_fifo,
        "kafka": play_kafka,
        "kinesis": play_stream,
        "dynamodb": play_stream,
    }[source]
    try:
        with contextlib.ExitStack() as watching:
            if crash_rate > 0:  # faults in writes are played: every write must be reachable
                watching.enter_context(uncovered_writes(switch.covered if switch else set()))
            expiry = Expiry(switch.clients, clock) if switch is not None else None
            stale = StaleReads(switch.clients, clock) if switch is not None else None
            for hooked in (expiry, stale):
                if hooked is not None:
                    watching.callback(hooked.remove)
            limit = max_invocations or 20 * len(records) + 50
            driver = Driver(call, switch, stale, rng, report, crash_rate, limit)
            play(records, driver, draws, played)
            play_what_is_owed(records, driver, draws, played, play, report)
            # Effects before the late deliveries, and only what they add after: an effect whose
            # own item expired on the clock is TTL's doing, not a loss.
            before_late = Counter(effects())
            report.late = play_late(
                records,
                driver,
                draws,
                played,
                play,
                key=key,
                expiry=expiry,
                clock=clock,
                began=began,
                window=report.redrive_window,
            )
            report.stale_reads = stale.served if stale is not None else 0
    except UncoveredWrite as uncovered:
        raise ValueError(str(uncovered)) from None
    finally:
        if switch is not None:
            switch.remove()
    after_late = Counter(effects())  # a mapping key -> count, or one entry per effect
    report.effects = before_late + (after_late - before_late) if report.late else after_late
    judge(records, key, report)
    return report


def _source(records: Sequence[Record]) -> str:
    """ "sqs", "fifo", "kafka", "kinesis" or "dynamodb"; ValueError for records the check cannot
    play."""
    if not records:
        raise ValueError("no records to deliver")
    ids = [record_id(r) for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError(
            "records must be distinct deliveries (messageId, topic-partition@offset, or eventID)"
        )
    if all("offset" in r for r in records):
        return "kafka"
    for kind in ("kinesis", "dynamodb"):
        if all(r.get("eventSource") == f"aws:{kind}" for r in records):
            return kind
    if not all("messageId" in r for r in records):
        raise ValueError(
            "records must be all SQS, all Kafka, all Kinesis or all DynamoDB stream records"
        )
    grouped = ["MessageGroupId" in (r.get("attributes") or {}) for r in records]
    fifo_arns = [str(r.get("eventSourceARN", "")).endswith(".fifo") for r in records]
    if any(grouped) != all(grouped) or grouped != fifo_arns:
        raise ValueError(
            "SQS records must all come from FIFO queues with a MessageGroupId each, or all from "
            "standard queues without one: a FIFO queue's ARN ends in .fifo (CloudFormation names "
            "an unnamed FIFO queue so; take it from the template, app.stack.queue(...).arn)"
        )
    return "fifo" if all(grouped) else "sqs"
