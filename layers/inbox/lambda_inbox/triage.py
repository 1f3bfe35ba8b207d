"""Skip known duplicates cheaply, and sort out what the batch itself repeats.

Before any handler runs, each delivery is either blocked by its ordering scope, poison found while
identifying it, a duplicate of a completed record, a later delivery of a key already led by an
earlier one in this batch (a *follower*, settled once its leader has an outcome), or a *leader*
that goes on to be decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .errors import ErrorCode, PoisonMessage
from .identity import Delivery
from .outcomes import Outcome
from .store import InboxRecord, Status

if TYPE_CHECKING:
    from .dead_letter import DeadLettering
    from .report import BatchReport

MISMATCH_REASON = "a different payload was already processed under this message key"


class Triage:
    """Sorts the deliveries of one batch; remembers leaders and their waiting followers."""

    def __init__(self, report: BatchReport, dead_letters: DeadLettering) -> None:
        self._report = report
        self._dead_letters = dead_letters
        self._leaders: dict[str, Delivery] = {}
        self._followers: list[Delivery] = []

    def admit(self, delivery: Delivery, record: InboxRecord | None) -> bool:
        """True when `delivery` leads its key and must be decided; otherwise it is settled or
        waits for its leader."""
        if self._report.skip_if_blocked(delivery):
            return False
        if delivery.poison is not None:
            self._dead_letters.dead_letter(delivery, delivery.poison)
            return False
        if record is not None and record.status is Status.COMPLETED:
            self.settle_against(delivery, record.fingerprint)
            return False
        leader = self._leaders.get(delivery.key)
        if leader is not None and not self._supersedes(leader, delivery):
            self._followers.append(delivery)
            return False
        self._leaders[delivery.key] = delivery
        return True

    def completed(self, delivery: Delivery, known: Mapping[str, InboxRecord]) -> bool:
        """Settle `delivery` when the read found its key completed (after it was decided: the
        read came late, for poison); False when it goes on."""
        record = known.get(delivery.key)
        if record is None or record.status is not Status.COMPLETED:
            return False
        self.settle_against(delivery, record.fingerprint)
        return True

    def settle_against(self, delivery: Delivery, stored_fingerprint: str | None) -> None:
        """A completed record exists: a duplicate, unless the payload differs (a producer bug,
        reported and dead-lettered, never silently acknowledged)."""
        if delivery.matches(stored_fingerprint):
            self._report.record(delivery, Outcome.DUPLICATE)
            return
        poison = PoisonMessage(MISMATCH_REASON, code=ErrorCode.FINGERPRINT_MISMATCH)
        self._dead_letters.dead_letter(delivery, poison, record_failure=False)

    def settle_followers(self, *, final: bool = False) -> None:
        """Settle the followers whose leader has an outcome (all of them when `final`).

        Same payload: a duplicate of whatever the leader became. A follower whose leader failed
        fails too, and blocks its own scope before later records of that scope commit.
        """
        waiting = []
        for follower in self._followers:
            leader = self._leaders[follower.key]
            outcome = self._report.outcome_of(leader)
            if outcome is None and not final:
                waiting.append(follower)
            elif self._report.skip_if_blocked(follower):
                continue
            elif outcome is None or outcome.needs_redelivery:
                detail = "an earlier delivery of this key in the batch did not finish"
                self._report.record(follower, Outcome.FAILED, ErrorCode.LEADER_FAILED, detail)
            else:
                self.settle_against(follower, leader.fingerprint)
        self._followers = waiting

    def _supersedes(self, leader: Delivery, delivery: Delivery) -> bool:
        """A new payload after a dead-lettered one (a producer's fix) is processed on its own,
        as it would be in a later batch: the FAILED record does not block it."""
        return (
            self._report.outcome_of(leader) is Outcome.DEAD_LETTERED
            and leader.fingerprint != delivery.fingerprint
        )
