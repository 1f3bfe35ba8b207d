"""What happened to each message of a batch."""

# Annotations are evaluated at import (no `from __future__ import annotations`): a NamedTuple
# compiles each string annotation into a ForwardRef, which costs more at cold start.
from enum import StrEnum
from typing import NamedTuple

from lambda_inbox._messages import InboundMessage


class Outcome(StrEnum):
    """Where one message of a batch ended. Only `FAILED` and `SKIPPED` are reported in the
    partial batch response, so that the event source delivers them again."""

    COMMITTED = "committed"
    """The inbox record and the handler's writes committed together."""
    BUSINESS_OUTCOME = "business_outcome"
    """A domain condition failed; the handler's alternative writes committed instead."""
    DUPLICATE = "duplicate"
    """Already processed (earlier delivery, another batch, or earlier in this batch)."""
    DEAD_LETTERED = "dead_lettered"
    """Poison: sent to the dead-letter queue with its original body, acknowledged."""
    FAILED = "failed"
    """Could not finish now (throttling, conflicts, outage): reported for redelivery."""
    SKIPPED = "skipped"
    """Not processed because an earlier record of its partition, shard or FIFO queue failed."""

    @property
    def needs_redelivery(self) -> bool:
        """Whether the message is reported in `batchItemFailures` (`FAILED`, `SKIPPED`)."""
        return self is Outcome.FAILED or self is Outcome.SKIPPED


#: What a record not finished before the deadline is reported with (code `deadline`).
DEADLINE_DETAIL = "no time left before the Lambda deadline; reported for redelivery"
#: Outcomes logged whatever the log level (a warning each); the others only at DEBUG.
ALWAYS_LOGGED = (Outcome.DEAD_LETTERED, Outcome.FAILED)


class MessageResult(NamedTuple):
    """What happened to one message: `InboxConsumer.process` returns one per message, in the
    batch's order."""

    message: InboundMessage
    """The message as received."""
    outcome: Outcome
    """Where it ended."""
    message_key: str | None = None
    """Its identity (None when none could be derived)."""
    error_code: str | None = None
    """An `ErrorCode` value for a dead-lettered or failed message; None otherwise."""
    detail: str = ""
    """A short explanation (an error's reason, a business outcome's result), for logs."""
