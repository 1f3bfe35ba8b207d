"""The report of one batch: each message's outcome, in input order, and the ordering it implies.

Only the pipeline writes the report: each stage returns (or yields) the `MessageResult`s it
settles, and the pipeline records them before the stage goes on. Stages read it through
`BatchView` (a leader's outcome, a blocked scope).

Ordering: a message may belong to an ordering scope (Kafka partition, FIFO queue or group). Once a
message of a scope needs redelivery, every later message of that scope is blocked: it is reported
as skipped so the source redelivers them in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

from lambda_inbox._errors import ErrorCode
from lambda_inbox._messages import InboundMessage
from lambda_inbox._outcomes import ALWAYS_LOGGED, DEADLINE_DETAIL, MessageResult, Outcome
from lambda_inbox._sources.identity import Delivery

if TYPE_CHECKING:  # protocols type the code only: nothing checks them at run time
    from typing import Protocol

    from lambda_inbox._telemetry import Telemetry

    class BatchView(Protocol):
        """What a stage may read of the batch's report."""

        def outcome_of(self, delivery: Delivery) -> Outcome | None: ...

        def blocked(self, delivery: Delivery) -> bool: ...


BLOCKED_DETAIL = "an earlier record of its ordering scope failed"


class Pending:
    """The result of poison sent with the next batch of dead letters (`PENDING`): the stage
    that flushes them returns the real one. Recording it records nothing."""

    __slots__ = ()


PENDING = Pending()


def settled(
    delivery: Delivery, outcome: Outcome, code: str | None = None, detail: str = ""
) -> MessageResult:
    """The result a stage returns for `delivery`."""
    return MessageResult(delivery.message, outcome, delivery.key, code, detail)


def out_of_time(delivery: Delivery) -> MessageResult:
    """The result of a delivery a stage did not start because the invocation's deadline has
    passed: reported for redelivery, never run into the function's timeout."""
    return MessageResult(
        delivery.message, Outcome.FAILED, delivery.key, ErrorCode.DEADLINE, DEADLINE_DETAIL
    )


def skipped(delivery: Delivery) -> MessageResult:
    """The result of a delivery its ordering scope blocks."""
    return settled(delivery, Outcome.SKIPPED, detail=BLOCKED_DETAIL)


class BatchReport:
    """Outcomes by message, and the failed ordering scopes."""

    def __init__(self, messages: Sequence[InboundMessage], telemetry: Telemetry) -> None:
        self.messages = sorted(messages, key=attrgetter("sequence"))
        self._results: dict[int, MessageResult] = {}
        self._failed_scopes: dict[str, int] = {}
        self._telemetry = telemetry
        #: Whether every outcome is logged (DEBUG), asked once per batch: otherwise only
        #: `ALWAYS_LOGGED` outcomes get a line (`Telemetry.message_done`).
        self._log_each = telemetry.logs_each_message()

    def record(self, result: MessageResult | Pending) -> None:
        if isinstance(result, Pending):
            return
        message, outcome = result.message, result.outcome
        self._results[message.sequence] = result
        if message.ordering_scope is not None and outcome.needs_redelivery:
            first = self._failed_scopes.get(message.ordering_scope, message.sequence)
            self._failed_scopes[message.ordering_scope] = min(first, message.sequence)
        if self._log_each or outcome in ALWAYS_LOGGED:
            self._telemetry.message_done(
                message, outcome, result.message_key, result.error_code, result.detail
            )

    def record_all(self, results: Iterable[MessageResult | Pending]) -> None:
        """Record each result before the stage yielding them goes on (it may read them)."""
        for result in results:
            self.record(result)

    def outcome_of(self, delivery: Delivery) -> Outcome | None:
        result = self._results.get(delivery.sequence)
        return result.outcome if result is not None else None

    def blocked(self, delivery: Delivery) -> bool:
        """Whether an earlier message of `delivery`'s ordering scope needs redelivery."""
        scope = delivery.message.ordering_scope
        return scope is not None and self._failed_scopes.get(scope, delivery.sequence) < (
            delivery.sequence
        )

    def results(self) -> list[MessageResult]:
        """Every message's result, in input order (each message has exactly one)."""
        return [self._results[message.sequence] for message in self.messages]
