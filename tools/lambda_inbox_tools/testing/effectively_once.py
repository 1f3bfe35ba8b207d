"""One check that a consumer is effectively-once: `check_effectively_once`.

It plays the event source against the handler (`check.players`) with what brokers and Lambda really
do, drawn from a seeded random generator (a failure names its seed, so it reproduces). Every run,
whatever the draws:

- **The function's own event source mapping** (`check.mapping`): its template's `BatchSize` and
  `FunctionResponseTypes` (without `ReportBatchItemFailures` the response is not read and the
  batch is deleted or checkpointed whole), the arguments overriding them.
- **SQS standard**: messages in any order, at least one acknowledged message delivered again
  (same `messageId`), every message a response reports or a failed invocation leaves delivered
  again with its receive count raised; two invocations holding one message at once (`check.overlap`).
  **SQS FIFO** (records with a `MessageGroupId`, from a `.fifo` queue): each group in order, a
  message not acknowledged and the rest of its group first again, an acknowledged batch whose
  deletion was lost delivered whole again; a response acknowledging a message after an earlier
  one of its group failed is named (`check.order`).
- **Kafka**: partitions interleaved, each in offset order, at most `BatchSize` records an
  invocation; a failed batch again from its first reported offset; every partition rewound at
  least once to an earlier committed offset (a rebalance).
- **Kinesis and DynamoDB Streams**: shards interleaved, one shard an invocation (Lambda's rule),
  each in sequence order, at most `BatchSize` records; a failed invocation again whole; a
  partial response from the lowest sequence number it names; every shard rewound at least once
  to an earlier checkpoint.
- **A new id**: at least one acknowledged message (that causes an effect) delivered again under
  a new id, a new SQS `messageId`, a new Kafka offset or a new Kinesis sequence number, its
  payload serialized again with its `volatile` fields restamped (`check.retries`), as a producer
  retry or a redrive after a commit whose acknowledgement was lost does. An SQS body that is an
  SNS notification comes again unchanged: SNS's redelivery of the notification under a new SQS
  `messageId`. (DynamoDB Streams have no such retry: an item written again unchanged makes no
  stream record.)
- **Faults in writes** (`crashes.CrashSwitch`), each owed kind at the first write of an
  invocation of new work, then drawn at any write: the runtime dies just before a DynamoDB write
  or just after it, a write fails after the SDK's retries, and DynamoDB's own failure of a write
  (`check.dynamodb_answers`: cancellations for `TransactionConflict` or `ThrottlingError`,
  `TransactionConflictException`, `UnprocessedItems`).
- **Late redeliveries** (`check.late`): an acknowledged message delivered again hours or days
  after the run began, another at the end of `redrive_window` (7 days unless given), on the check's clock
  (`check.clock`), the items whose TTL lapsed by then deleted first and `ClientRequestToken`s
  older than 10 minutes forgotten (`check.expiry`), as DynamoDB forgets them.
- **What is owed, kept**: batches smaller while faults are owed; a batch as full as the source
  can hand over; what a run still owes played at its end, the effects of the messages under
  observation witnessed first.

See docs/testing.md, "The effectively-once check", for what it cannot see.

A handler whose DynamoDB writes the check cannot reach (a plain function without `clients`) is
refused at its first write, naming `clients`; one that writes nothing needs none. When every
message is acknowledged, the effects the test names (`effects()`, one entry per effect that
happened, or a mapping key -> count) must hold each message key (`key(record)`) exactly once, and
nothing else. A key of None says the message must cause no effect (a poison or rejected
message).
"""

from __future__ import annotations

import contextlib
import random
import traceback
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from .check.clock import CheckClock
from .check.expiry import Expiry
from .check.late import DEFAULT_REDRIVE_WINDOW, late_span, play_late, played_window
from .check.mapping import Played, played_settings
from .check.overlap import overlapping
from .check.owed import play_what_is_owed
from .check.players import Draws, play_fifo, play_kafka, play_sqs, play_stream
from .crashes import CrashSwitch, InjectedCrash, UncoveredWrite, When, uncovered_writes
from .events import record_id

Record = Mapping[str, Any]
Effects = Callable[[], Iterable[Hashable] | Mapping[Hashable, int]]
#: Invocations failing in a row after which a run stops: the handler fails on its own.
FAILING_IN_A_ROW = 50
#: The faults every run injects first, in this order, each at the first write of an invocation.
OWED_FAULTS: tuple[When, ...] = ("error", "dynamodb", "before", "after")


class NotEffectivelyOnce(AssertionError):
    """Effects lost, applied twice, or caused by a message that should cause none; or a run
    that could not finish."""


@dataclass
class Report:
    """What the check delivered and injected, and the effects it found."""

    seed: int
    messages: int
    #: The event source mapping settings played (`check.mapping`): the template's unless overridden.
    settings: Played | None = None
    invocations: int = 0
    #: Times two invocations held the same SQS message at once (`check.overlap`).
    overlaps: int = 0
    #: Times every message was delivered again at the end for a fault the run still owed.
    owed_rounds: int = 0
    deliveries: int = 0
    duplicates: int = 0
    #: Kafka partitions rewound to an earlier committed offset.
    replays: int = 0
    #: Acknowledged messages delivered again under a new id.
    new_ids: int = 0
    #: Of those, SNS notifications delivered again unchanged under a new SQS `messageId`.
    sns_redeliveries: int = 0
    #: Faults that fired: "before" / "after" (crashes), "error" (a write failed after the SDK's
    #: retries) and "dynamodb" (DynamoDB's own failure of a write, named in `dynamodb`).
    crashes: Counter[str] = field(default_factory=Counter)
    #: DynamoDB's failures answered, by name ("TransactionCanceledException[TransactionConflict]",
    #: "TransactionConflictException", "UnprocessedItems", ...).
    dynamodb: Counter[str] = field(default_factory=Counter)
    #: Which write of its invocation each fault hit (1: the first).
    fault_writes: Counter[int] = field(default_factory=Counter)
    #: Invocations that ended with an exception of the handler's own.
    raised: int = 0
    #: FIFO responses judged for order (`check.order`), and the messages they acknowledged after an
    #: earlier message of their group failed ("GROUP: LATER after FAILED").
    order_checks: int = 0
    out_of_order: list[str] = field(default_factory=list)
    #: Keys found without their effect before an owed redelivery repeated their messages.
    lost_early: set[str] = field(default_factory=set)
    #: The late redeliveries played (`check.late`): the message, how late, what expired first;
    #: within `redrive_window`.
    late: list[str] = field(default_factory=list)
    redrive_window: timedelta | None = None

    effects: Counter[Hashable] = field(default_factory=Counter)

    def __str__(self) -> str:
        answered = (*self.crashes.items(), *self.dynamodb.items())
        faults = ", ".join(f"{n} {kind}" for kind, n in sorted(answered) if kind != "dynamodb")
        faults = faults or "none"
        return (
            f"{self.messages} messages in {self.invocations} invocations ({self.deliveries} "
            f"deliveries, {self.duplicates} duplicates, {self.new_ids} under a new id"
            f"{f' ({self.sns_redeliveries} SNS redeliveries)' if self.sns_redeliveries else ''}, "
            f"{self.replays} rewinds, {self.owed_rounds} rounds for owed faults, "
            f"{self.order_checks} responses judged for order, {self.overlaps} overlapping "
            f"invocations; late, in a redrive window of {late_span(self.redrive_window or 0)}: "
            f"{'; '.join(self.late) or 'none'}; faults: {faults}; "
            f"{self.settings}; seed {self.seed})"
        )


class _Driver:
    """Invokes the handler with a fault armed: the owed ones first, then at `crash_rate`, at a
    write drawn over the writes an invocation of this handler makes."""

    def __init__(
        self,
        call: Callable[[dict[str, Any]], Any],
        switch: CrashSwitch | None,
        rng: random.Random,
        report: Report,
        crash_rate: float,
        limit: int,
    ) -> None:
        self.call, self.switch, self.rng = call, switch, rng
        self.report, self.crash_rate, self.limit = report, crash_rate, limit
        self.owed: list[When] = list(OWED_FAULTS) if crash_rate > 0 else []
        #: The most writes an invocation made without a fault (what a fault is drawn over).
        self.most_writes = 1
        self.last_error: BaseException | None = None
        #: The kind of the fault that fired in the last invocation, if one did.
        self.last_fault: str | None = None
        self.failing_in_a_row = 0
        #: Whether any invocation wrote (a fault can fire only in one that does).
        self.wrote = False
        #: Set for the rounds played at the end for owed faults: no first deliveries are left.
        self.last_round = False

    @property
    def faults_owed(self) -> int:
        return len(self.owed) if self.switch is not None else 0

    @property
    def can_overlap(self) -> bool:
        """Whether two invocations can be played at once (the clients are known)."""
        return self.switch is not None

    def invoke_overlapping(self, events: list[tuple[dict[str, Any], int]]) -> list[Any]:
        """Invocations at once on threads of their own, no fault armed (`check.overlap`); each one's
        response, None where it raised."""
        if self.switch is None:
            raise ValueError("overlapping invocations need the handler's clients")
        self.report.invocations += len(events)
        self.report.deliveries += sum(size for _, size in events)
        self.report.overlaps += 1
        self.failing_in_a_row = 0

        def invocation(event: dict[str, Any]) -> Callable[[], Any]:
            def run() -> Any:
                try:
                    return self.call(event)
                except UncoveredWrite:
                    raise
                except Exception as error:  # a failed invocation
                    self.last_error = error
                    return None

            return run

        self.last_fault = None
        return overlapping([invocation(event) for event, _ in events], self.switch.clients)

    def invoke(self, event: dict[str, Any], size: int, fresh: bool = True) -> Any:
        report = self.report
        report.invocations += 1
        report.deliveries += size
        if report.invocations > self.limit:
            raise NotEffectivelyOnce(self._unfinished(f"after {self.limit} invocations"))
        if self.failing_in_a_row >= FAILING_IN_A_ROW:
            raise NotEffectivelyOnce(
                self._unfinished(f"after {FAILING_IN_A_ROW} invocations failing in a row")
            )
        fault = self._fault(fresh or self.last_round)
        if self.switch is not None:
            self.switch.start()
            if fault is not None:
                self.switch.arm(*fault)
        self.failing_in_a_row += 1
        try:
            response = self.call(event)
        except UncoveredWrite:
            raise
        except InjectedCrash:  # the runtime died: no response
            return None
        except Exception as error:  # a failed invocation: the event source delivers it again
            report.raised += 1
            self.last_error = error
            return None
        finally:
            self._settle(fault)
        self.failing_in_a_row = 0
        return response

    def _fault(self, fresh: bool) -> tuple[When, int] | None:
        """The owed faults first, each at the first write of a batch that starts with a first
        delivery (a duplicate may make no write, or one that changes nothing); then drawn."""
        if self.switch is None:
            return None
        if self.owed and fresh:
            return self.owed[0], 1
        if self.crash_rate and self.rng.random() < self.crash_rate:
            kind: When = self.rng.choice(OWED_FAULTS)
            return kind, self.rng.randint(1, self.most_writes)
        return None

    def _settle(self, fault: tuple[When, int] | None) -> None:
        self.last_fault = None
        if self.switch is None:
            return
        fired = fault is not None and self.switch.disarm()
        self.report.dynamodb.update(self.switch.answered)
        if fired and fault is not None:
            self.last_fault = fault[0]
            self.report.crashes[fault[0]] += 1
            self.report.fault_writes[fault[1]] += 1
            if self.owed and self.owed[0] == fault[0]:
                self.owed.pop(0)
        elif fault is None or not fired:
            self.most_writes = max(self.most_writes, self.switch.writes)
        self.wrote = self.wrote or self.switch.writes > 0 or fired
        self.switch.fired.clear()

    def _unfinished(self, when: str) -> str:
        text = f"messages still unacknowledged {when}"
        if self.last_error is not None:
            frame = traceback.extract_tb(self.last_error.__traceback__)[-1:]
            where = f" ({frame[0].filename}:{frame[0].lineno} in {frame[0].name})" if frame else ""
            text += (
                f"; the handler raised {self.report.raised} times, last "
                f"{type(self.last_error).__name__}: {self.last_error}{where}"
            )
        return f"{text}: {self.report}"


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
    redrive_window: timedelta = DEFAULT_REDRIVE_WINDOW,
) -> Report:
    """Drive `handler` through `records` (all SQS, Kafka, Kinesis or DynamoDB stream records, as
    the kit's `events` and `stream_events` build them) with what the event source and Lambda do
    (see the module), then check the effects. `clients`: the DynamoDB clients the handler
    writes through (a `LocalFunction`'s own unless given). `batch_size` and
    `report_batch_item_failures`: the event source mapping's `BatchSize` and
    `FunctionResponseTypes`, a `LocalFunction`'s template's unless given (`check.mapping`).
    `volatile`: the payload fields the producer stamps anew on every send (dotted paths, such
    as "sent_at"), changed in a message delivered under a new id (`check.retries`). `clock`: the
    check's clock (`check.clock.CheckClock`; pass the one the consumer's `InboxConfig(clock=...)`
    holds); `redrive_window`: how late a message may come again (a dead-letter redrive, a replay),
    which the inbox's retention must cover (`check.late`). Returns the report; raises `NotEffectivelyOnce` naming the keys lost,
    applied twice, or unexpected, and `ValueError` for records or clients it cannot play."""
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
        identity=key,
        volatile=tuple(volatile),
    )

    def witness(acknowledged: Sequence[Record]) -> None:
        now = Counter(effects())
        keys = (key(record) for record in acknowledged)
        report.lost_early.update(str(k) for k in keys if k is not None and now[k] == 0)

    draws.witness = witness

    def call(event: dict[str, Any]) -> Any:
        return handler(event, context() if callable(context) else None)

    driver = _Driver(
        call, switch, rng, report, crash_rate, max_invocations or 20 * len(records) + 50
    )
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
            if expiry is not None:
                watching.callback(expiry.remove)
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
                window=redrive_window,
            )
    except UncoveredWrite as uncovered:
        raise ValueError(str(uncovered)) from None
    finally:
        if switch is not None:
            switch.remove()
    report.duplicates, report.new_ids, report.replays = (
        draws.duplicates,
        draws.new_ids,
        draws.rewinds,
    )
    report.order_checks, report.out_of_order = draws.order_checks, draws.out_of_order
    report.sns_redeliveries = draws.sns_redeliveries
    after_late = Counter(effects())  # a mapping key -> count, or one entry per effect
    report.effects = before_late + (after_late - before_late) if report.late else after_late
    _verdict(records, key, report)
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


def _verdict(
    records: Sequence[Record], key: Callable[[Record], Hashable | None], report: Report
) -> None:
    expected = {k for k in (key(r) for r in records) if k is not None}
    lost = sorted({str(k) for k in expected if report.effects[k] == 0} | report.lost_early)
    twice = sorted(f"{k} x{n}" for k, n in report.effects.items() if k in expected and n > 1)
    unexpected = sorted(str(k) for k, n in report.effects.items() if k not in expected and n)
    labelled = (
        ("lost", lost),
        ("applied twice", twice),
        ("unexpected", unexpected),
        ("acknowledged out of order", report.out_of_order),
    )
    problems = [
        f"{label}: {', '.join(keys[:20])}{' ...' if len(keys) > 20 else ''}"
        for label, keys in labelled
        if keys
    ]
    if problems:
        raise NotEffectivelyOnce("; ".join(problems) + f" ({report})")
