"""The seeded choices of a run of the effectively-once check (`Draws`), and what every run owes
whatever the draws: one duplicate of an acknowledged message, one delivery of an acknowledged
message under a new id, a rewind of each Kafka partition and stream shard, two overlaps of
invocations holding the same messages, a batch that begins across groups (a later message of
one group, partition or shard before an earlier one of another), a batch as full as the source
hands over. The players (`queues`, `lanes`) read and keep them; what a run counts goes straight
to its report.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ....batch_responses import BatchOutcome, batch_outcome
from ....local.invoker import Invocation
from ...events import record_id
from ..driver import Driver
from ..mapping import Played
from ..report import Report
from ..schedule import SURVIVED
from .retries import retried, sns_notification_id

__all__ = ["OWED_OVERLAPS", "Draws", "outcome"]

Record = Mapping[str, Any]
#: Overlapping invocations every run owes.
OWED_OVERLAPS = 2


def outcome(answer: Invocation, identifiers: Sequence[Any], played: Played) -> BatchOutcome:
    """What the mapping `played` makes of an invocation's `answer` to a batch of `identifiers`
    (`batch_responses.batch_outcome`: AWS's one rule)."""
    return batch_outcome(
        answer.response,
        identifiers,
        raised=answer.failed,
        reads_response=played.report_batch_item_failures,
    )


@dataclass
class Draws:
    """The run's seeded choices, and what it owes whatever the draws (see the module).

    A message acknowledged by an invocation in which a write failed (`observe`) is never
    delivered again by the check's own choice: a consumer that acknowledged it without writing
    keeps that loss, which a chance redelivery would otherwise repair."""

    rng: random.Random
    #: 0 turns duplicates, new ids, rewinds and overlaps off, the owed ones too.
    duplicate_rate: float
    #: Whether a record causes an effect (a key that is not None): the new-id copies are drawn
    #: among these, so that a copy always has something to double.
    has_effect: Callable[[Record], bool]
    #: The run's report, where the players count what they play.
    report: Report
    owed_duplicate: bool = True
    owed_new_id: bool = True
    owed_overlaps: int = OWED_OVERLAPS
    #: Whether the run still owes a batch that begins across groups (`across`).
    owed_across: bool = True
    rewound: set[str] = field(default_factory=set)
    #: The delivery ids (`events.record_id`) under observation (see above).
    observed: set[str] = field(default_factory=set)
    #: Delivery ids delivered again under a new id, and those new ids: a message is sent again
    #: once, and a copy is not copied (else a lane that rewinds could grow without end).
    copied: set[str] = field(default_factory=set)
    #: Called with observed records before an owed redelivery repeats them: the check looks at
    #: their effects then, so that the redelivery cannot hide a loss.
    witness: Callable[[Sequence[Record]], None] = lambda records: None
    #: What a message is, whatever its delivery (the check's `key`): a copy under a new id is
    #: no first delivery.
    identity: Callable[[Record], Hashable | None] = record_id
    #: The identities of the messages acknowledged so far, or first in a batch a fault fell in
    #: after a write.
    done: set[Hashable] = field(default_factory=set)
    #: The identities of the messages acknowledged so far, and how many the run holds.
    acknowledged: set[Hashable] = field(default_factory=set)
    expected: int = 0
    #: Whether a batch as full as the records allowed was acknowledged whole.
    full_batch_done: bool = False
    #: The fullest batch the source can hand over (the player sets it): `BatchSize`, or fewer
    #: when the records (of a shard, a partition) are fewer.
    full_size: int = 1
    #: The fields a producer stamps anew on every send (`retries.retried`).
    volatile: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.duplicate_rate <= 0:
            self.owed_duplicate = self.owed_new_id = False
            self.owed_overlaps = 0

    def observe(
        self, driver: Driver, batch: Sequence[Record], acknowledged: Sequence[Record]
    ) -> None:
        """After an invocation of `batch`: what it acknowledged is no new work any more, nor its
        first message when a fault fell after a write had landed (part of its writes done)."""
        touched = batch[:1] if driver.wrote_before_the_fault else []
        self.done.update(self.identity(r) for r in touched)
        new = {self.identity(r) for r in acknowledged} - self.acknowledged
        if new:
            self.acknowledged.update(new)
            self.done.update(new)
            driver.progressed(waiting=len(self.acknowledged) < self.expected)
        if driver.last_fault in ("error", "dynamodb", "lost"):  # the handler saw a failed write
            self.observed.update(record_id(r) for r in acknowledged)

    def owes_rewind(self, lane: str) -> bool:
        return self.duplicate_rate > 0 and lane not in self.rewound

    def duplicate(self, record: Record) -> bool:
        if record_id(record) in self.observed:
            return False
        if self.owed_duplicate or self.rng.random() < self.duplicate_rate:
            self.owed_duplicate = False
            self.report.duplicates += 1
            return True
        return False

    def new_id(self, record: Record) -> bool:
        delivery = record_id(record)
        if not self.has_effect(record) or delivery in self.observed or delivery in self.copied:
            return False
        if self.owed_new_id or self.rng.random() < self.duplicate_rate / 3:
            self.owed_new_id = False
            self.report.new_ids += 1
            self.copied.add(delivery)
            return True
        return False

    def fresh(self, batch: Sequence[Record]) -> bool:
        """Whether `batch` starts with a message that causes an effect and was never
        acknowledged nor touched by a fault: new work, where a fault shows what it costs."""
        first = self.identity(batch[0])
        return first is not None and first not in self.done

    def room(self, driver: Driver, played: Played, pending: Sequence[Record]) -> int:
        """The most records the next batch holds: fewer than `BatchSize` while faults or
        overlaps are owed and new work is pending, so that each finds new work; then
        `BatchSize`. (A full batch is owed too: `full_batch_done`, played at the end if the run
        gave none.)"""
        owed = driver.faults_owed + (self.owed_overlaps if driver.can_overlap else 0)
        new = sum(1 for r in pending if self.fresh([r])) if owed else 0
        if owed and new:
            return max(1, min(played.batch_size, len(pending) // (min(owed, new) + 1)))
        return played.batch_size

    def cut(self, driver: Driver, pending: Sequence[Record], size: int, first: bool) -> int:
        """How many of a lane's `pending` records the next batch takes, at most `size`: while
        faults or overlaps are owed, new work is left at the head of its lane for a batch that
        begins with it. The batch's `first` lane, when it does not begin with new work, ends
        before it; another lane gives only the records before its new work (none when it
        begins with it)."""
        if not driver.faults_owed and not (self.owed_overlaps and driver.can_overlap):
            return size
        before = next((n for n, record in enumerate(pending) if self.fresh([record])), len(pending))
        return size if first and before == 0 else min(size, before)

    def delivered(self, size: int, acknowledged: int) -> None:
        """After an invocation of `size` records, `acknowledged` of them."""
        if size >= self.full_size and acknowledged == size:
            self.full_batch_done = True

    def overlap_now(self, driver: Driver, batch: Sequence[Record]) -> bool:
        """Whether `batch` is played with a second invocation holding its first messages at
        once (`check.overlap`): the first owed overlap on the run's first batch of new work
        (it measures the writes a message makes), the second once the owed faults fired, or
        in the rounds at the end."""
        if not (self.owed_overlaps > 0 and driver.can_overlap):
            return False
        if driver.last_round:
            return True
        return self.fresh(batch) and (not driver.probed or driver.faults_owed == 0)

    def faulting(self, driver: Driver) -> bool:
        """Whether the next batch of new work is played with an owed fault the handler goes on
        after (a failed write): its first record must have a later one of its key beside it."""
        return driver.probed and bool(driver.owed) and driver.owed[0][0] in SURVIVED

    def preferred(self, driver: Driver, lanes: list[str], good: Callable[[str], bool]) -> list[str]:
        """`lanes` in the order the next batch takes them: while it is played with an owed fault
        the handler goes on after (`faulting`), those whose next record is new work with a
        later record of its key pending come first, so the fault leaves a later one behind."""
        if not self.faulting(driver):
            return lanes
        return sorted(lanes, key=lambda lane: not good(lane))

    def overlapped(self) -> None:
        self.owed_overlaps -= 1

    def across(self, lanes: list[str], first: str) -> list[str]:
        """`lanes` (in the order the next batch takes them) so that the run's first batch begins
        with another lane than `first`, the lane of the earliest record: a later message before
        an earlier one of another group, which AWS does not order."""
        if self.owed_across and len(set(lanes)) > 1:
            self.owed_across = False
            self.report.across_lanes += 1
            if lanes[0] == first:
                turn = next(n for n, lane in enumerate(lanes) if lane != first)
                lanes = lanes[turn:] + lanes[:turn]
        return lanes

    def copy(self, again: dict[str, Any]) -> dict[str, Any]:
        """`again`, a message delivered again under a new id, as its producer sends it again
        (`retries.retried`; an SNS notification: the same one, SNS's redelivery), noted as a
        copy."""
        if sns_notification_id(again) is not None:
            self.report.sns_redeliveries += 1
        else:
            again = retried(again, self.rng, self.volatile)
        self.copied.add(record_id(again))
        return again

    def again(self, overlaps: int = 0) -> Draws:
        """Draws for a last round or a late delivery: no chance duplicates, new ids or rewinds,
        `overlaps` still owed; the rest as these."""
        draws = Draws(
            self.rng,
            0.0,
            self.has_effect,
            self.report,
            owed_across=False,
            identity=self.identity,
            done=self.done,
            acknowledged=self.acknowledged,
            expected=self.expected,
            witness=self.witness,
            volatile=self.volatile,
        )
        draws.owed_overlaps = overlaps
        return draws
