"""Acting on a message's final verdict (`settle`): its result, dead-letter writes DynamoDB
refused, settle a duplicate against the record that won, or decide again after a domain
condition failed (a business outcome)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from lambda_inbox._commit.actions import ConditionFailures, FailedCondition
from lambda_inbox._commit.settle import Verdict, VerdictKind
from lambda_inbox._errors import ErrorCode, HandlerFailed, PoisonMessage
from lambda_inbox._outcomes import MessageResult, Outcome
from lambda_inbox._report import Pending, settled
from lambda_inbox.store import InboxRecord, Status
from lambda_inbox.store._attribute_values import deserialize_item

if TYPE_CHECKING:
    from lambda_inbox._commit.decision import Decider, Decision
    from lambda_inbox._dead_letter.queue import DeadLettering
    from lambda_inbox._telemetry import Telemetry
    from lambda_inbox._triage import Triage

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
        telemetry: Telemetry,
    ) -> None:
        self._decider = decider
        self._triage = triage
        self._dead_letters = dead_letters
        self._telemetry = telemetry

    def act(self, decision: Decision[M], verdict: Verdict) -> MessageResult | Pending | None:
        """The decision's result (`PENDING` for poison, dead-lettered with the batch's next
        dead letters); None when it goes back for another attempt."""
        delivery = decision.delivery
        kind = verdict.kind
        if kind == VerdictKind.COMMITTED:
            outcome = Outcome.BUSINESS_OUTCOME if decision.rounds else Outcome.COMMITTED
            return settled(delivery, outcome, detail=verdict.detail)
        if kind == VerdictKind.UNAVAILABLE:
            code = ErrorCode.DYNAMODB_UNAVAILABLE
            return settled(delivery, Outcome.FAILED, code, verdict.detail)
        if kind == VerdictKind.REJECTED:
            poison = PoisonMessage(verdict.detail, code=ErrorCode.WRITE_REJECTED)
            return self._dead_letters.defer(delivery, poison)
        if kind == VerdictKind.INBOX_TAKEN:
            return self._inbox_taken(decision, verdict)
        if kind == VerdictKind.CONDITION_FAILED:
            return self._redecide(decision, verdict.failures)
        return None  # BYSTANDER of another message's failure

    def _inbox_taken(
        self, decision: Decision[M], verdict: Verdict
    ) -> MessageResult | Pending | None:
        if decision.creates:
            return self._item_exists(decision, verdict)
        stored = InboxRecord.from_item(verdict.stored) if verdict.stored else None
        if decision.lease_owner is not None:  # leased mode: the lease was taken over or reaped
            self._telemetry.logger.warning(
                "lease lost; the completion was not committed",
                extra={
                    "consumer": self._telemetry.consumer,
                    "message_key": decision.delivery.key,
                    "stored_status": stored.status.value if stored else None,
                },
            )
            code, detail = ErrorCode.LEASE_LOST, LEASE_LOST_DETAIL
            return settled(decision.delivery, Outcome.FAILED, code, detail)
        if stored is not None and stored.status is Status.IN_PROGRESS:
            detail = "another delivery holds a lease on this message"
            return settled(decision.delivery, Outcome.FAILED, ErrorCode.IN_PROGRESS, detail)
        return self._triage.settle_against(
            decision.delivery, stored.fingerprint if stored else None
        )

    def _item_exists(
        self, decision: Decision[M], verdict: Verdict
    ) -> MessageResult | Pending | None:
        """A `CreatesItem` put found its item: made by this consumer, a duplicate (or a
        conflict, when the fingerprints differ); otherwise a business outcome, as a failed
        domain condition is."""
        from lambda_inbox.store._created_item import created_record  # CreatesItem consumers'

        stored = deserialize_item(verdict.stored) if verdict.stored else {}
        record = created_record(stored)
        if record is not None and record.consumer == self._telemetry.consumer:
            return self._triage.settle_against(decision.delivery, record.fingerprint)
        self._telemetry.logger.warning(
            "the item exists, not made by this consumer",
            extra={"consumer": self._telemetry.consumer, "message_key": decision.delivery.key},
        )
        failed = FailedCondition(decision.actions[0], dict(stored) if stored else None)
        return self._redecide(decision, ConditionFailures((failed,)))

    def _redecide(
        self, decision: Decision[M], failures: ConditionFailures | None
    ) -> MessageResult | Pending | None:
        if failures is None:  # settle gives every CONDITION_FAILED verdict its failures
            raise RuntimeError(f"condition_failed verdict without failures: {decision!r}")
        try:
            self._decider.redecide(decision, failures)
        except PoisonMessage as poison:
            return self._dead_letters.defer(decision.delivery, poison)
        except HandlerFailed as error:
            return settled(decision.delivery, Outcome.FAILED, error.code, str(error))
        return None
