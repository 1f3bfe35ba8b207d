"""What a run of the effectively-once check played and found (`Report`), and the failure that
carries it (`NotEffectivelyOnce`): a team's test reads the report's fields (`lost`,
`applied_twice`, `unexpected`, `out_of_order`, `unfinished`), not the message's text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from .clock import late_span
from .mapping import Played

__all__ = ["NotEffectivelyOnce", "Report", "judge"]


@dataclass
class Report:
    """What the check delivered and injected, and the effects it found."""

    seed: int
    messages: int
    #: The event source mapping settings played (`check.mapping`): the template's unless overridden.
    settings: Played | None = None
    invocations: int = 0
    #: Times two invocations held the same messages at once (`check.overlap`): an SQS
    #: visibility timeout that ran out (standard or FIFO), a Kafka rebalance, a stream's retry.
    overlaps: int = 0
    #: Reads answered as DynamoDB may answer a read without `ConsistentRead` (`check.dynamodb.stale`).
    stale_reads: int = 0
    #: Times every message was delivered again at the end for a fault the run still owed.
    owed_rounds: int = 0
    deliveries: int = 0
    duplicates: int = 0
    #: Kafka partitions and stream shards rewound to an earlier committed position.
    replays: int = 0
    #: Acknowledged messages delivered again under a new id.
    new_ids: int = 0
    #: Of those, SNS notifications delivered again unchanged under a new SQS `messageId`.
    sns_redeliveries: int = 0
    #: Faults that fired: "before" / "after" (crashes), "error" (a write failed after the SDK's
    #: retries), "dynamodb" (DynamoDB's own failure of a write, named in `dynamodb`) and "lost"
    #: (a write's answer lost, the write sent again).
    crashes: Counter[str] = field(default_factory=Counter)
    #: DynamoDB's failures answered, by name ("TransactionCanceledException[TransactionConflict]",
    #: "TransactionConflictException", "UnprocessedItems", ...).
    dynamodb: Counter[str] = field(default_factory=Counter)
    #: Which write of its invocation each fault hit (1: the first).
    fault_writes: Counter[int] = field(default_factory=Counter)
    #: Each kind of fault -> the writes of an invocation it fell at (`check.schedule`).
    positions: dict[str, set[int]] = field(default_factory=dict)
    #: The most writes one message of new work made (`check.schedule`: the owed faults' range).
    writes_per_message: int = 0
    #: Invocations that ended with an exception of the handler's own.
    raised: int = 0
    #: FIFO responses judged for order (`check.sources.order`), and the messages they acknowledged after an
    #: earlier message of their group failed ("GROUP: LATER after FAILED").
    order_checks: int = 0
    out_of_order: list[str] = field(default_factory=list)
    #: Batches that began with a later message than one of another group, partition or shard
    #: still to come (order AWS does not promise across them).
    across_lanes: int = 0
    #: Keys found without their effect before an owed redelivery repeated their messages.
    lost_early: set[str] = field(default_factory=set)
    #: The late redeliveries played (`check.sources.late`): the message, how late, what expired first;
    #: within `redrive_window`.
    late: list[str] = field(default_factory=list)
    redrive_window: timedelta | None = None

    effects: Counter[Hashable] = field(default_factory=Counter)
    #: The verdict: keys without their effect, keys applied more than once (-> times), effects
    #: of no message's key, and why the run could not finish (None: it did).
    lost: list[str] = field(default_factory=list)
    applied_twice: dict[str, int] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)
    unfinished: str | None = None

    @property
    def problems(self) -> list[str]:
        """Each finding, labelled ("lost: E-1, E-2"); empty when the run proved nothing wrong."""
        labelled = (
            ("lost", self.lost),
            ("applied twice", [f"{k} x{n}" for k, n in self.applied_twice.items()]),
            ("unexpected", self.unexpected),
            ("acknowledged out of order", self.out_of_order),
        )
        found = [
            f"{label}: {', '.join(keys[:20])}{' ...' if len(keys) > 20 else ''}"
            for label, keys in labelled
            if keys
        ]
        return [self.unfinished, *found] if self.unfinished else found

    def __str__(self) -> str:
        answered = (*self.crashes.items(), *self.dynamodb.items())
        faults = ", ".join(f"{n} {kind}" for kind, n in sorted(answered) if kind != "dynamodb")
        faults = faults or "none"
        where = "; ".join(
            f"{kind} {','.join(map(str, sorted(at)))}"
            for kind, at in sorted(self.positions.items())
        )
        return (
            f"{self.messages} messages in {self.invocations} invocations ({self.deliveries} "
            f"deliveries, {self.duplicates} duplicates, {self.new_ids} under a new id"
            f"{f' ({self.sns_redeliveries} SNS redeliveries)' if self.sns_redeliveries else ''}, "
            f"{self.replays} rewinds, {self.owed_rounds} rounds for owed faults, "
            f"{self.order_checks} responses judged for order, {self.across_lanes} batches "
            f"across groups, {self.overlaps} overlapping invocations, {self.stale_reads} stale "
            f"reads; late, in a redrive window of {late_span(self.redrive_window or 0)}: "
            f"{'; '.join(self.late) or 'none'}; faults: {faults}; at writes (of "
            f"{self.writes_per_message} a message): {where or 'none'}; {self.settings}; "
            f"seed {self.seed})"
        )


class NotEffectivelyOnce(AssertionError):
    """Effects lost, applied twice, or caused by a message that should cause none; a FIFO
    message acknowledged out of order; or a run that could not finish. `report` holds what was
    played and found (`Report.lost`, `applied_twice`, `unexpected`, `out_of_order`,
    `unfinished`)."""

    def __init__(self, report: Report) -> None:
        super().__init__(f"{'; '.join(report.problems)} ({report})")
        self.report = report


def judge(
    records: Sequence[Mapping[str, Any]],
    key: Callable[[Mapping[str, Any]], Hashable | None],
    report: Report,
) -> None:
    """Fills the report's verdict from its effects; raises `NotEffectivelyOnce` when it finds a
    problem."""
    expected = {k for k in (key(r) for r in records) if k is not None}
    report.lost = sorted({str(k) for k in expected if report.effects[k] == 0} | report.lost_early)
    report.applied_twice = {
        str(k): n for k, n in sorted(report.effects.items(), key=str) if k in expected and n > 1
    }
    report.unexpected = sorted(str(k) for k, n in report.effects.items() if k not in expected and n)
    if report.problems:
        raise NotEffectivelyOnce(report)
