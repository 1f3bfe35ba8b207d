"""Acting on a message's final verdict (`settle`): record its outcome, dead-letter writes DynamoDB
refused, settle a duplicate against the record that won, or decide again after a domain
condition failed (a business outcome)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from lambda_inbox.commit.settle import Verdict, VerdictKind
from lambda_inbox.errors import ErrorCode, HandlerFailed, PoisonMessage
from lambda_inbox.outcomes import Outcome
from lambda_inbox.store import Status

if TYPE_CHECKING:
    from lambda_inbox.commit.decision import Decider, Decision
    from lambda_inbox.dead_letter.queue import DeadLettering
    from lambda_inbox.report import BatchReport
    from lambda_inbox.telemetry import Telemetry
    from lambda_inbox.triage import Triage

M = TypeVar("M")
LEASE_LOST_DETAIL = "the lease was lost before completion (taken over or reaped); nothing committed"


class FinalVerdicts(Generic[M]):
    """What a final verdict means for its decision, in one batch."""

    def __init__(
        self,
        *,
        decider: Decider[M],
        triage: Triage,
        dead_letters: DeadLettering,
        report: BatchReport,
        telemetry: Telemetry,
    ) -> None:
        self._decider = decider
        self._triage = triage
        self._dead_letters = dead_letters
        self._report = report
        self._telemetry = telemetry

    def act(self, decision: Decision[M], verdict: Verdict) -> bool:
        """Record a final verdict; True when the decision goes back for another attempt."""
        delivery = decision.delivery
        kind = verdict.kind
        if kind is VerdictKind.COMMITTED:
            outcome = Outcome.BUSINESS_OUTCOME if decision.rounds else Outcome.COMMITTED
            self._report.record(delivery, outcome, detail=verdict.detail)
        elif kind is VerdictKind.UNAVAILABLE:
            code = ErrorCode.DYNAMODB_UNAVAILABLE
            self._report.record(delivery, Outcome.FAILED, code, verdict.detail)
        elif kind is VerdictKind.REJECTED:
            poison = PoisonMessage(verdict.detail, code=ErrorCode.WRITE_REJECTED)
            self._dead_letters.dead_letter(delivery, poison)
        elif kind is VerdictKind.INBOX_TAKEN:
            self._inbox_taken(decision, verdict)
        elif kind is VerdictKind.CONDITION_FAILED:
            return self._redecide(decision, verdict)
        else:  # BYSTANDER of another message's failure
            return True
        return False

    def _inbox_taken(self, decision: Decision[M], verdict: Verdict) -> None:
        stored = verdict.stored or {}
        if decision.lease_owner is not None:  # leased mode: the lease was taken over or reaped
            self._telemetry.logger.warning(
                "lease lost; the completion was not committed",
                extra={
                    "consumer": self._telemetry.consumer,
                    "message_key": decision.delivery.key,
                    "stored_status": stored.get("status"),
                },
            )
            code, detail = ErrorCode.LEASE_LOST, LEASE_LOST_DETAIL
            return self._report.record(decision.delivery, Outcome.FAILED, code, detail)
        if stored.get("status") == Status.IN_PROGRESS.value:
            detail = "another delivery holds a lease on this message"
            self._report.record(decision.delivery, Outcome.FAILED, ErrorCode.IN_PROGRESS, detail)
            return
        self._triage.settle_against(decision.delivery, stored.get("fingerprint"))

    def _redecide(self, decision: Decision[M], verdict: Verdict) -> bool:
        if verdict.failures is None:  # settle gives every CONDITION_FAILED verdict its failures
            raise RuntimeError(f"condition_failed verdict without failures: {verdict!r}")
        try:
            self._decider.redecide(decision, verdict.failures)
        except PoisonMessage as poison:
            self._dead_letters.dead_letter(decision.delivery, poison)
            return False
        except HandlerFailed as error:
            self._report.record(decision.delivery, Outcome.FAILED, error.code, str(error))
            return False
        return True
