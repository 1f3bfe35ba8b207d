"""Skip known duplicates cheaply, and sort out what the batch itself repeats.

`ReadFirst` decides whether the batch read of the inbox keys comes before the commit;
`Triage` sorts the deliveries of one batch.

Before any handler runs, each delivery is either blocked by its ordering scope, poison found while
identifying it, a duplicate of a completed record, a later delivery of a key already led by an
earlier one in this batch (a *follower*, settled once its leader has an outcome), or a *leader*
that goes on to be decided.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from lambda_inbox._config import DuplicateRead
from lambda_inbox._errors import ErrorCode, PoisonMessage
from lambda_inbox._outcomes import MessageResult, Outcome
from lambda_inbox._report import Pending, settled, skipped
from lambda_inbox._sources.identity import Delivery
from lambda_inbox.store import InboxRecord, Status

if TYPE_CHECKING:
    from lambda_inbox._dead_letter.queue import DeadLettering
    from lambda_inbox._messages import InboundMessage
    from lambda_inbox._report import BatchView

MISMATCH_REASON = "a different payload was already processed under this message key"
LEADER_FAILED_DETAIL = "an earlier delivery of this key in the batch did not finish"
FIX_AFTER_DEAD_LETTER_DETAIL = (
    "an earlier delivery of this key in the batch was dead-lettered while committing; this other "
    "payload is processed when it is delivered again"
)


def mismatch_reason(delivery: Delivery, stored_fingerprint: str) -> str:
    """What a fingerprint conflict's dead letter says: both fingerprints and the sender."""
    sender = delivery.message.sender or "none named by the source"
    return (
        f"{MISMATCH_REASON}: completed with fingerprint {stored_fingerprint}, this payload's "
        f"is {delivery.fingerprint}; sender {sender}"
    )


class Triage:
    """Sorts the deliveries of one batch; remembers leaders and their waiting followers.

    It reads the batch's outcomes (`BatchView`) and returns the results it settles.
    """

    def __init__(self, batch: BatchView, dead_letters: DeadLettering) -> None:
        self._batch = batch
        self._dead_letters = dead_letters
        self._leaders: dict[str, Delivery] = {}
        #: Each follower with the leader it follows (a later leader of its key may supersede it).
        self._followers: list[tuple[Delivery, Delivery]] = []
        #: The fingerprint of each key's COMPLETED record the batch has met (made on the first:
        #: most batches meet none).
        self._completed: dict[str, str | None] | None = None

    def settle_known(
        self, delivery: Delivery, record: InboxRecord | None
    ) -> MessageResult | Pending | None:
        """The result of a delivery settled before any handler runs (blocked by its scope,
        poison found while identifying it, completed before; poison waits to be sent with the
        batch's other dead letters); None when it goes on."""
        if self._batch.blocked(delivery):
            return skipped(delivery)
        if delivery.poison is not None:
            return self._dead_letters.defer(delivery, delivery.poison)
        if record is not None and record.status is Status.COMPLETED:
            return self.settle_against(delivery, record.fingerprint)
        return None

    def lead(self, delivery: Delivery) -> bool:
        """True when `delivery` leads its key and must be decided; False when it follows an
        earlier delivery of its key and waits for its outcome."""
        leader = self._leaders.get(delivery.key)
        if leader is not None and not self._supersedes(leader, delivery):
            self._followers.append((delivery, leader))
            return False
        self._leaders[delivery.key] = delivery
        return True

    def completed(
        self, delivery: Delivery, known: Mapping[str, InboxRecord]
    ) -> MessageResult | Pending | None:
        """The result of `delivery` when the read found its key completed (after it was
        decided: the read came late, for poison); None when it goes on."""
        record = known.get(delivery.key)
        if record is None or record.status is not Status.COMPLETED:
            return None
        return self.settle_against(delivery, record.fingerprint)

    def settle_against(
        self, delivery: Delivery, stored_fingerprint: str | None
    ) -> MessageResult | Pending:
        """A completed record exists: a duplicate, unless the payload differs (a producer bug,
        reported and dead-lettered, never silently acknowledged)."""
        if self._completed is None:
            self._completed = {}
        self._completed[delivery.key] = stored_fingerprint
        if delivery.matches(stored_fingerprint):
            return settled(delivery, Outcome.DUPLICATE)
        reason = mismatch_reason(delivery, stored_fingerprint or "")
        poison = PoisonMessage(reason, code=ErrorCode.FINGERPRINT_MISMATCH)
        return self._dead_letters.defer(delivery, poison, record_failure=False)

    def settle_followers(self, *, final: bool = False) -> Iterator[MessageResult | Pending]:
        """Yield the results of the followers whose leader has an outcome (all of them when
        `final`); each is recorded before the next (a failed follower blocks its scope).

        A follower whose leader failed fails too, and blocks its own scope before later records
        of that scope commit. Otherwise it is settled against the key's COMPLETED record (the
        leader's, when the leader committed), as it would be in a later batch; after a
        dead-lettered leader, the same payload is a duplicate and another one is processed on
        its own (reported for redelivery when the leader was dead-lettered while committing).
        """
        waiting = []
        for follower, leader in self._followers:
            outcome = self._batch.outcome_of(leader)
            if outcome is None and not final:
                waiting.append((follower, leader))
            elif self._batch.blocked(follower):
                yield skipped(follower)
            elif outcome is None or outcome.needs_redelivery:
                code = ErrorCode.LEADER_FAILED
                yield settled(follower, Outcome.FAILED, code, LEADER_FAILED_DETAIL)
            else:
                yield self._follow(follower, leader, outcome)
        self._followers = waiting

    def _follow(
        self, follower: Delivery, leader: Delivery, outcome: Outcome
    ) -> MessageResult | Pending:
        """The result of a follower whose leader finished with `outcome`."""
        completed = self._completed or {}
        if outcome is Outcome.DEAD_LETTERED:
            if follower.fingerprint == leader.fingerprint:
                return settled(follower, Outcome.DUPLICATE)  # the DLQ holds it already
            if follower.key not in completed:  # a producer's fix, too late to decide now
                code = ErrorCode.LEADER_FAILED
                return settled(follower, Outcome.FAILED, code, FIX_AFTER_DEAD_LETTER_DETAIL)
        return self.settle_against(follower, completed.get(follower.key, leader.fingerprint))

    def _supersedes(self, leader: Delivery, delivery: Delivery) -> bool:
        """A new payload after a dead-lettered one (a producer's fix) is processed on its own,
        as it would be in a later batch: the FAILED record does not block it."""
        return (
            self._batch.outcome_of(leader) is Outcome.DEAD_LETTERED
            and leader.fingerprint != delivery.fingerprint
        )


#: Share of recent batches holding a duplicate above which the read comes first. At 5%, the
#: cancelled attempts add 2.5% (at most 5%) to the write units that batches of new payments
#: commit, for a round trip saved on every batch (docs/CAPACITY.md, "Reading first or not").
RECENT_DUPLICATE_THRESHOLD = 0.05
HALF_LIFE_BATCHES = 10
_DECAY = 0.5 ** (1 / HALF_LIFE_BATCHES)


class ReadFirst:
    """Decides, batch by batch, whether the inbox keys are read before the commit.

    The read only finds duplicates early: the inbox `Put` of every transaction is the real
    guard, and a cancelled transaction names each taken key with its stored record, so a batch
    of new messages commits in one request without it. The read comes first when something
    suggests a duplicate:

    - a message delivered before (`InboundMessage.redelivered`: an SQS receive count above 1, a
      Kafka offset this execution environment has already seen for its partition, a dead letter
      or record replayed);
    - recent batches of this consumer in this execution environment found duplicates: more than
      `RECENT_DUPLICATE_THRESHOLD` of them, counted with weight halving every
      `HALF_LIFE_BATCHES`;
    - poison in the batch (found while identifying; poison found while deciding has the keys
      read then, before anything is sent; `pipeline`): a poison message that completed before
      is a duplicate, and nothing is dead-lettered while the inbox table cannot be read;
    - leased mode (a lease is claimed per message: its record decides first);
    - never for a `CreatesItem` consumer but for poison or `"always"`: its committed messages
      are its items, not inbox records, and a redelivered put costs what a read would;
    - `InboxConfig.duplicate_read = "always"`. `"never"` skips it unless leased.

    A duplicate found by the commit costs the cancelled attempt (docs/CAPACITY.md) and one more
    request for the rest of its transaction; the read costs a request on every batch.
    """

    __slots__ = ("_creates_items", "_leased", "_mode", "recent_duplicates")

    def __init__(
        self, mode: DuplicateRead = "auto", *, leased: bool = False, creates_items: bool = False
    ) -> None:
        self._mode = mode
        self._leased = leased
        self._creates_items = creates_items
        #: Decaying share of recent batches that held a duplicate.
        self.recent_duplicates = 0.0

    def reason(self, messages: Sequence[InboundMessage]) -> str | None:
        """Why this batch reads first, or None when the commit finds its duplicates."""
        if self._leased:
            return "leased"
        if self._mode != "auto":
            return "always" if self._mode == "always" else None
        if self._creates_items:  # the inbox holds no record of a created item: its put checks
            return None
        if any(message.redelivered for message in messages):
            return "redelivered"
        if self.recent_duplicates > RECENT_DUPLICATE_THRESHOLD:
            return "recent_duplicates"
        return None

    def observe(self, results: Sequence[MessageResult]) -> None:
        """Count a finished batch: did it hold a duplicate (found by the read or the commit)?"""
        held = any(result.outcome is Outcome.DUPLICATE for result in results)
        self.recent_duplicates = self.recent_duplicates * _DECAY + (1 - _DECAY) * held
