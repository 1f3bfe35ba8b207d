"""Every error lambda_inbox raises or records, and the codes that name them.

Each exception is an `InboxError` with a stable `code`. Codes are what operators see: the
`inbox-error-code` attribute of a dead-lettered message, `error_code` on FAILED inbox records and
in logs. `ErrorCode` lists them all; docs/errors.md explains each one.

`PoisonMessage` is the one handlers raise themselves: it declares that a message can never
succeed, so it is dead-lettered and acknowledged instead of being retried in vain.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Why a message was dead-lettered (poison) or reported for redelivery (failure)."""

    # Poison: dead-lettered, FAILED record, acknowledged.
    UNDECODABLE_BODY = "undecodable_body"
    MALFORMED_JSON = "malformed_json"
    UNDECODABLE_VALUE = "undecodable_value"
    MISSING_KEY = "missing_key"
    INVALID_PAYLOAD = "invalid_payload"
    REJECTED_BY_HANDLER = "rejected_by_handler"
    INVALID_WRITES = "invalid_writes"
    WRITE_REJECTED = "write_rejected"
    CONDITION_FAILED = "condition_failed"
    FINGERPRINT_MISMATCH = "fingerprint_mismatch"
    ENVELOPE_MISMATCH = "envelope_mismatch"
    # Leased mode (docs/concepts.md, "Leased mode").
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"
    LEASE_EXPIRED = "lease_expired"
    # Failures: reported in batchItemFailures, redelivered by the event source.
    INBOX_UNAVAILABLE = "inbox_unavailable"
    DYNAMODB_UNAVAILABLE = "dynamodb_unavailable"
    RETRIES_EXHAUSTED = "retries_exhausted"
    DEADLINE = "deadline"
    HANDLER_ERROR = "handler_error"
    LEADER_FAILED = "leader_failed"
    IN_PROGRESS = "in_progress"
    DEAD_LETTER_FAILED = "dead_letter_failed"
    LEASE_LOST = "lease_lost"
    SIDE_EFFECT_FAILED = "side_effect_failed"


class InboxError(Exception):
    """Base class of every error raised by lambda_inbox."""

    code: str = "inbox_error"


class ConfigurationError(InboxError, ValueError):
    """The inbox was configured inconsistently (missing table name, bad limits...)."""

    code = "configuration"


class UnsupportedEvent(InboxError, ValueError):
    """The event is neither an SQS nor a Kafka batch; the message says what was received."""

    code = "unsupported_event"


class MalformedRecord(InboxError, ValueError):
    """An event of a known source lacks what every record of that source has."""

    code = "malformed_record"


class PoisonMessage(InboxError):
    """The message will never succeed: dead-letter it and acknowledge it.

    `code` becomes the `inbox-error-code` attribute of the dead-lettered message.
    """

    def __init__(self, reason: str, *, code: str = ErrorCode.REJECTED_BY_HANDLER) -> None:
        super().__init__(reason)
        self.code = str(code)
        self.reason = reason


class UndecodableBody(PoisonMessage):
    """The body is not UTF-8 text, not JSON, or could not be decoded from its envelope."""

    def __init__(self, reason: str, *, code: str = ErrorCode.UNDECODABLE_BODY) -> None:
        super().__init__(reason, code=code)


class MissingMessageKey(PoisonMessage):
    """The key extractor found no usable key in the payload."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, code=ErrorCode.MISSING_KEY)


class InvalidPayload(PoisonMessage):
    """The payload failed validation; the reason names fields, never values."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, code=ErrorCode.INVALID_PAYLOAD)


class UnitOfWorkError(InboxError, ValueError):
    """A handler asked for writes DynamoDB would refuse (checked before any call)."""

    code = ErrorCode.INVALID_WRITES.value


class HandlerFailed(InboxError):
    """The user's handler raised: a bug or an outage, reported so the source retries."""

    code = ErrorCode.HANDLER_ERROR.value


class DeadlineReached(InboxError):
    """No Lambda time was left for a network call (or it did not answer in the time left); what it
    was for is reported for redelivery."""

    code = ErrorCode.DEADLINE.value


def short_error(error: BaseException) -> str:
    return truncate(f"{type(error).__name__}: {error}")


def truncate(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
