"""The ledger of one batch: each message's outcome, in input order, and the ordering it implies.

Ordering: a message may belong to an ordering scope (Kafka partition, FIFO queue or group). Once a
message of a scope needs redelivery, every later message of that scope is blocked: it is reported
as skipped so the source redelivers them in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

from lambda_inbox.messages import InboundMessage
from lambda_inbox.outcomes import ALWAYS_LOGGED, MessageResult, Outcome
from lambda_inbox.sources.identity import Delivery

if TYPE_CHECKING:
    from lambda_inbox.telemetry import Telemetry

BLOCKED_DETAIL = "an earlier record of its ordering scope failed"


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

    def record(
        self, delivery: Delivery, outcome: Outcome, code: str | None = None, detail: str = ""
    ) -> None:
        message = delivery.message
        self._results[message.sequence] = MessageResult(
            message, outcome, delivery.key, code, detail
        )
        if message.ordering_scope is not None and outcome.needs_redelivery:
            first = self._failed_scopes.get(message.ordering_scope, message.sequence)
            self._failed_scopes[message.ordering_scope] = min(first, message.sequence)
        if self._log_each or outcome in ALWAYS_LOGGED:
            self._telemetry.message_done(message, outcome, delivery.key, code, detail)

    def outcome_of(self, delivery: Delivery) -> Outcome | None:
        result = self._results.get(delivery.sequence)
        return result.outcome if result is not None else None

    def skip_if_blocked(self, delivery: Delivery) -> bool:
        """Record `delivery` as skipped when an earlier message of its scope failed."""
        scope = delivery.message.ordering_scope
        if scope is None or self._failed_scopes.get(scope, delivery.sequence) >= delivery.sequence:
            return False
        self.record(delivery, Outcome.SKIPPED, detail=BLOCKED_DETAIL)
        return True

    def results(self) -> list[MessageResult]:
        """Every message's result, in input order (each message has exactly one)."""
        return [self._results[message.sequence] for message in self.messages]
