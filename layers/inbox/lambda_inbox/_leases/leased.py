"""Leased mode: for handlers whose effect leaves DynamoDB (payment APIs, email, webhooks).

Per leader delivery, after the duplicate filter and `decide`:

1. **claim**: a conditional write of an `IN_PROGRESS` record with a fresh owner token, a lease
   expiry and `attempts + 1`. Claimable: no record, an expired one (`expires_at < now`), a
   `FAILED` one (a replay: attempts start again at 1), or an `IN_PROGRESS` one whose lease has
   expired. A live `COMPLETED` record makes the delivery a duplicate; a live lease held by
   another delivery makes it `failed` with `in_progress` (redelivered later). The claim also
   stores the payload snapshot, so the reaper can dead-letter a message that never comes back.
2. **side effect**: `side_effect(payload, LeaseContext)`; `LeaseContext.message_key` is the
   provider's idempotency key, `LeaseContext.time_left()` bounds its timeouts.
3. **complete**: the usual transaction, whose inbox `Put` is conditioned on
   `status = IN_PROGRESS AND owner = me`. A completion that lost its lease commits nothing and
   is reported `failed` with `lease_lost` (log line and `LeasesLost` metric).

Failures of the side effect: `PoisonMessage` is dead-lettered (record `FAILED`). Anything else
is transient: the message is reported `failed` with `side_effect_failed` and the lease is
**kept** until it expires (the outcome of a timed-out call is unknown: the lease is the backoff
that keeps the next delivery from calling the provider again at once); with
`LeasePolicy(release_on_failure=True)` it is released at once instead. The claim that would be
attempt `max_attempts + 1`, and a transient failure of attempt `max_attempts`, dead-letter the
message with `attempts_exhausted` instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from lambda_inbox._errors import DeadlineReached, ErrorCode, PoisonMessage, short_error
from lambda_inbox._internal.deadline import Deadline
from lambda_inbox._leases.policy import LeasePolicy, lease_policy
from lambda_inbox._outcomes import MessageResult, Outcome
from lambda_inbox._report import Pending, out_of_time, settled, skipped
from lambda_inbox.store import InboxRecord
from lambda_inbox.store._leases import Claim, ClaimState, LeaseWrites

if TYPE_CHECKING:
    from lambda_inbox._commit.decision import Decision
    from lambda_inbox._dead_letter.queue import DeadLettering
    from lambda_inbox._report import BatchView
    from lambda_inbox._telemetry import Telemetry
    from lambda_inbox._triage import Triage

__all__ = [
    "Claim",
    "ClaimState",
    "LeaseContext",
    "LeasePolicy",
    "LeaseWrites",
    "Leases",
    "SideEffect",
    "lease_policy",
]

M = TypeVar("M")
_NO_DEADLINE = Deadline(None)


@dataclass(frozen=True, slots=True)
class LeaseContext:
    """What a side effect knows about its lease."""

    message_key: str
    """The message key: pass it to the provider as its idempotency key."""
    owner: str
    """This claim's owner token."""
    attempt: int
    """1 for the first claim of the message, 2 after a takeover, ..."""
    lease_expires_at: float
    """When the lease expires, epoch seconds: finish (or give up) before then."""
    deadline: Deadline = _NO_DEADLINE
    """The invocation's deadline (`time_left` counts it too); none by default, as for a side
    effect a test calls itself."""
    clock: Callable[[], float] = time.time
    """The wall clock `time_left` reads (epoch seconds)."""

    def time_left(self) -> float:
        """Seconds before the lease expires or the invocation must answer, whichever is first."""
        lease_left = self.lease_expires_at - self.clock()
        invocation_left = self.deadline.left()
        left = lease_left if invocation_left is None else min(lease_left, invocation_left)
        return max(0.0, left)


SideEffect = Callable[[M, LeaseContext], object]


class Leases(Generic[M]):
    """The leased-mode stage of one consumer: claim, run the side effect, hand over to commit."""

    def __init__(
        self,
        store: LeaseWrites,
        side_effect: SideEffect[M],
        *,
        telemetry: Telemetry,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self._side_effect = side_effect
        self._telemetry = telemetry
        self._now = now

    def lease(
        self,
        decision: Decision[M],
        *,
        batch: BatchView,
        triage: Triage,
        dead_letters: DeadLettering,
        deadline: Deadline,
    ) -> MessageResult | Pending | None:
        """Claim `decision`'s lease and run its side effect: None when it succeeded and the
        decision is ready to complete (`lease_owner` set), otherwise the message's result
        (`PENDING` when it is dead-lettered with the batch's other dead letters)."""
        delivery = decision.delivery
        if batch.blocked(delivery):
            return skipped(delivery)
        if deadline.expired():
            return out_of_time(delivery)
        log = self._telemetry.logger
        try:
            claim = deadline.run(
                self.store.claim,
                delivery.message,
                delivery.key,
                delivery.fingerprint,
                now=self._now(),
            )
        except Exception as error:
            log.error(
                "lease claim failed; the record is reported for redelivery",
                extra={"message_key": delivery.key, "error": short_error(error)},
            )
            late = isinstance(error, DeadlineReached)
            code = ErrorCode.DEADLINE if late else ErrorCode.INBOX_UNAVAILABLE
            return settled(delivery, Outcome.FAILED, code, short_error(error))
        if claim.state is ClaimState.COMPLETED:
            return triage.settle_against(delivery, _decided_by(claim).fingerprint)
        if claim.state is ClaimState.HELD:
            detail = "another delivery holds a live lease on this message"
            return settled(delivery, Outcome.FAILED, ErrorCode.IN_PROGRESS, detail)
        if claim.state is ClaimState.EXHAUSTED:
            reason = (
                f"{claim.attempt} leased attempts did not complete; last error: "
                f"{_decided_by(claim).last_error or 'none recorded (the lease expired)'}"
            )
            poison = PoisonMessage(reason, code=ErrorCode.ATTEMPTS_EXHAUSTED)
            return dead_letters.dead_letter(delivery, poison)
        context = LeaseContext(
            message_key=delivery.key,
            owner=claim.owner,
            attempt=claim.attempt,
            lease_expires_at=claim.lease_expires_at,
            deadline=deadline,
            clock=self._now,
        )
        try:
            self._side_effect(decision.payload, context)
        except PoisonMessage as poison:
            return dead_letters.dead_letter(delivery, poison)
        except Exception as error:
            return self._side_effect_failed(decision, claim, error, dead_letters, deadline)
        decision.lease_owner = claim.owner
        return None

    def _side_effect_failed(
        self,
        decision: Decision[M],
        claim: Claim,
        error: Exception,
        dead_letters: DeadLettering,
        deadline: Deadline,
    ) -> MessageResult:
        delivery = decision.delivery
        detail = short_error(error)
        self._telemetry.logger.warning(
            "side effect failed",
            extra={"message_key": delivery.key, "attempt": claim.attempt, "error": detail},
        )
        if claim.attempt >= self.store.max_attempts:
            reason = f"{claim.attempt} leased attempts failed; last error: {detail}"
            return dead_letters.dead_letter(
                delivery, PoisonMessage(reason, code=ErrorCode.ATTEMPTS_EXHAUSTED)
            )
        try:
            deadline.run(
                self.store.fail_attempt,
                delivery.key,
                claim.owner,
                code=ErrorCode.SIDE_EFFECT_FAILED,
                error=detail,
                now=self._now(),
            )
        except Exception as write_error:  # the lease simply expires instead
            self._telemetry.logger.warning(
                "could not record the failed attempt on the lease",
                extra={"message_key": delivery.key, "error": short_error(write_error)},
            )
        return settled(delivery, Outcome.FAILED, ErrorCode.SIDE_EFFECT_FAILED, detail)


def _decided_by(claim: Claim) -> InboxRecord:
    """The stored record behind a claim that was not granted (the store always returns it)."""
    if claim.record is None:
        raise RuntimeError(f"a {claim.state.value} claim without its record")
    return claim.record
