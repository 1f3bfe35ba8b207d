"""One check that a consumer is effectively-once: `check_effectively_once`.

It plays the event source against the handler with the faults brokers and Lambda really produce,
drawn from a seeded random generator (a failure names its seed, so it reproduces):

- SQS standard: messages delivered in shuffled order, some delivered twice (at-least-once
  delivery), every message a response reports or a failed invocation leaves delivered again with
  its receive count raised. SQS FIFO (records with a `MessageGroupId`): order kept within each
  group, a failed message and the rest of its group delivered again first.
- Kafka: partitions interleaved, each in offset order; a failed batch delivered again from its
  first reported offset; partitions rewound now and then (a replay after a rebalance).
- Crashes: the runtime dies just before or just after one of the invocation's DynamoDB writes
  (`crashes.CrashSwitch`); the event source then delivers the whole batch again.

When every message has been acknowledged, the effects the test names (`effects()`, one entry
per effect that happened, or a mapping key -> count) must hold each message key (`key(record)`)
exactly once, and nothing else. A key of None says the message must cause no effect (a poison or
rejected message).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .crashes import CrashSwitch, InjectedCrash, When
from .events import failed_ids, failed_offsets, kafka_event, record_id, redeliver, sqs_event

Record = Mapping[str, Any]
Effects = Callable[[], Iterable[Hashable] | Mapping[Hashable, int]]


class NotEffectivelyOnce(AssertionError):
    """Effects lost, applied twice, or caused by a message that should cause none."""


@dataclass
class Report:
    """What the check delivered and injected, and the effects it found."""

    seed: int
    messages: int
    invocations: int = 0
    deliveries: int = 0
    duplicates: int = 0
    replays: int = 0
    crashes: Counter[str] = field(default_factory=Counter)
    effects: Counter[Hashable] = field(default_factory=Counter)

    def __str__(self) -> str:
        crashes = ", ".join(f"{n} {when}" for when, n in sorted(self.crashes.items())) or "none"
        return (
            f"{self.messages} messages in {self.invocations} invocations ({self.deliveries} "
            f"deliveries, {self.duplicates} duplicates, {self.replays} replays; crashes: "
            f"{crashes}; seed {self.seed})"
        )


class _Driver:
    def __init__(
        self,
        handler: Callable[[dict[str, Any]], Any],
        switch: CrashSwitch | None,
        rng: random.Random,
        report: Report,
        crash_rate: float,
        limit: int,
    ) -> None:
        self.handler, self.switch, self.rng = handler, switch, rng
        self.report, self.crash_rate, self.limit = report, crash_rate, limit
        #: Crashes every run injects first, whatever the draw: one of each kind.
        self.owed: list[When] = ["before", "after"] if crash_rate > 0 else []

    def invoke(self, event: dict[str, Any], size: int) -> Any:
        """The handler's response, or None when the invocation crashed or raised."""
        self.report.invocations += 1
        self.report.deliveries += size
        if self.report.invocations > self.limit:
            raise NotEffectivelyOnce(
                f"messages still unacknowledged after {self.limit} invocations: {self.report}"
            )
        when: When | None = None
        if self.switch is not None and (self.owed or self.rng.random() < self.crash_rate):
            chosen: When = self.owed[0] if self.owed else self.rng.choice(("before", "after"))
            self.switch.arm(chosen, 1 if self.owed else self.rng.randint(1, 2))
            when = chosen
        try:
            return self.handler(event)
        except InjectedCrash:
            return None
        except Exception:  # a failed invocation: the event source delivers the batch again
            return None
        finally:
            if self.switch is not None and when is not None and self.switch.disarm():
                self.report.crashes[when] += 1
                if when in self.owed:
                    self.owed.remove(when)


def _drive_sqs(records: Sequence[Record], driver: _Driver, batch_size: int, dup: float) -> None:
    rng = driver.rng
    fifo = any("MessageGroupId" in r.get("attributes", {}) for r in records)
    queue = list(records)
    if fifo:  # groups interleaved at random, each in its own order
        groups: dict[str, list[Record]] = {}
        for record in records:
            groups.setdefault(record["attributes"]["MessageGroupId"], []).append(record)
        lanes = [list(g) for g in groups.values()]
        queue = []
        while lanes:
            lane = rng.choice(lanes)
            queue.append(lane.pop(0))
            lanes = [lane for lane in lanes if lane]
    else:
        rng.shuffle(queue)
    duplicated: set[str] = set()
    while queue:
        batch, queue = queue[:batch_size], queue[batch_size:]
        response = driver.invoke(sqs_event(*batch), len(batch))
        if response is None:
            failed = {str(r["messageId"]) for r in batch}
        elif isinstance(response, Mapping) and response.get("batchItemFailures"):
            failed = set(failed_ids(response))
        else:
            failed = set()
        again = [redeliver(r) for r in batch if r["messageId"] in failed]
        if fifo:
            queue = again + queue
        else:
            for record in again:
                queue.insert(rng.randint(0, len(queue)), record)
        for record in batch:
            if record["messageId"] in failed or record["messageId"] in duplicated:
                continue
            if rng.random() < dup:  # delivered once more, later (at-least-once delivery)
                duplicated.add(record["messageId"])
                driver.report.duplicates += 1
                queue.insert(rng.randint(0, len(queue)), redeliver(record))


def _drive_kafka(records: Sequence[Record], driver: _Driver, batch_size: int, dup: float) -> None:
    rng = driver.rng
    partitions: dict[str, list[Record]] = {}
    for record in records:
        partitions.setdefault(f"{record['topic']}-{record['partition']}", []).append(record)
    for lane in partitions.values():
        lane.sort(key=lambda r: int(r["offset"]))
    position = dict.fromkeys(partitions, 0)
    while any(position[p] < len(partitions[p]) for p in partitions):
        for name in partitions:
            if position[name] > 0 and rng.random() < dup / 2:  # a replay after a rebalance
                position[name] -= rng.randint(1, min(position[name], batch_size))
                driver.report.replays += 1
        open_ = [p for p in partitions if position[p] < len(partitions[p])]
        chosen = rng.sample(open_, rng.randint(1, len(open_)))
        taken = {p: partitions[p][position[p] : position[p] + batch_size] for p in chosen}
        batch = [r for p in chosen for r in taken[p]]
        response = driver.invoke(kafka_event(batch), len(batch))
        if response is None:
            continue
        first_failed: dict[str, int] = {}
        if isinstance(response, Mapping) and response.get("batchItemFailures"):
            for name, offset in failed_offsets(response):
                first_failed[name] = min(offset, first_failed.get(name, offset))
        for name in chosen:
            offsets = [int(r["offset"]) for r in taken[name]]
            if name in first_failed:
                position[name] += offsets.index(first_failed[name])
            else:
                position[name] += len(offsets)


def check_effectively_once(
    handler: Callable[[dict[str, Any], Any], Any],
    records: Sequence[Record],
    *,
    effects: Effects,
    key: Callable[[Record], Hashable | None],
    clients: Iterable[Any] | None = None,
    seed: int = 0,
    batch_size: int = 10,
    duplicate_rate: float = 0.3,
    crash_rate: float = 0.25,
    max_invocations: int | None = None,
) -> Report:
    """Drive `handler` through `records` (all SQS records, or all Kafka records, as the kit's
    `events` builds them) with duplicates, redeliveries, reordering and crashes, then check the
    effects: see the module docstring. `clients`: where crashes are injected (for a
    `LocalFunction`, its own clients unless given; None and no clients: no crashes). Returns the
    report; raises `NotEffectivelyOnce` naming the keys lost, applied twice, or unexpected."""
    if not records:
        raise ValueError("no records to deliver")
    ids = [record_id(r) for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError(
            "records must be distinct deliveries (messageId, or topic-partition@offset)"
        )
    if clients is None:
        clients = getattr(handler, "clients", None)
    context = getattr(handler, "context", None)
    switch = CrashSwitch(clients) if clients else None
    report = Report(seed=seed, messages=len(records))
    # A seeded generator that reproduces a run, for a test's schedule: no secret here (B311).
    rng = random.Random(seed)  # nosec B311
    limit = max_invocations or 20 * len(records) + 50

    def call(event: dict[str, Any]) -> Any:
        return handler(event, context() if callable(context) else None)

    driver = _Driver(call, switch, rng, report, crash_rate, limit)
    try:
        if all("messageId" in r for r in records):
            _drive_sqs(records, driver, batch_size, duplicate_rate)
        elif all("offset" in r for r in records):
            _drive_kafka(records, driver, batch_size, duplicate_rate)
        else:
            raise ValueError("records must be all SQS records or all Kafka records")
    finally:
        if switch is not None:
            switch.remove()
    observed = effects()
    report.effects = Counter(observed)  # a mapping key -> count, or one entry per effect
    _verdict(records, key, report)
    return report


def _verdict(
    records: Sequence[Record], key: Callable[[Record], Hashable | None], report: Report
) -> None:
    expected = {k for k in (key(r) for r in records) if k is not None}
    lost = sorted(str(k) for k in expected if report.effects[k] == 0)
    twice = sorted(f"{k} x{n}" for k, n in report.effects.items() if k in expected and n > 1)
    unexpected = sorted(str(k) for k, n in report.effects.items() if k not in expected and n)
    problems = [
        f"{label}: {', '.join(keys[:20])}{' ...' if len(keys) > 20 else ''}"
        for label, keys in (("lost", lost), ("applied twice", twice), ("unexpected", unexpected))
        if keys
    ]
    if problems:
        raise NotEffectivelyOnce("; ".join(problems) + f" ({report})")
