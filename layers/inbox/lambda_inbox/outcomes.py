"""What happened to each message of a batch."""

# Annotations are evaluated at import (no `from __future__ import annotations`): a NamedTuple
# compiles each string annotation into a ForwardRef, which costs more at cold start.
from enum import StrEnum
from typing import NamedTuple

from lambda_inbox.messages import InboundMessage


class Outcome(StrEnum):
    #: The inbox record and the handler's writes committed together.
    COMMITTED = "committed"
    #: A domain condition failed; the handler's alternative writes committed instead.
    BUSINESS_OUTCOME = "business_outcome"
    #: Already processed (earlier delivery, another batch, or earlier in this batch).
    DUPLICATE = "duplicate"
    #: Poison: sent to the dead-letter queue with its original body, acknowledged.
    DEAD_LETTERED = "dead_lettered"
    #: Could not finish now (throttling, conflicts, outage): reported for redelivery.
    FAILED = "failed"
    #: Not processed because an earlier record of its partition or FIFO queue failed.
    SKIPPED = "skipped"

    @property
    def needs_redelivery(self) -> bool:
        return self is Outcome.FAILED or self is Outcome.SKIPPED


#: Outcomes logged whatever the log level (a warning each); the others only at DEBUG.
ALWAYS_LOGGED = (Outcome.DEAD_LETTERED, Outcome.FAILED)


class MessageResult(NamedTuple):
    message: InboundMessage
    outcome: Outcome
    message_key: str | None = None
    error_code: str | None = None
    detail: str = ""
