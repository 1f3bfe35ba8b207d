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
    """Why a message was dead-lettered (poison) or reported for redelivery (failure): the
    `inbox-error-code` attribute of a dead letter, `error_code` of a FAILED inbox record, of a
    `MessageResult` and of the logs. Those down to `LEASE_EXPIRED` are poison, the rest failures; the
    errors page of the documentation says what to do about each."""

    # Poison: dead-lettered, FAILED record, acknowledged.
    UNDECODABLE_BODY = "undecodable_body"
    """The body is not UTF-8, or a Kafka value is missing or not base64."""
    MALFORMED_JSON = "malformed_json"
    """The body is not JSON, or JSON Python cannot read (a number of more than 4,300 digits)."""
    UNDECODABLE_VALUE = "undecodable_value"
    """An Avro or Protobuf value does not decode with the consumer's `ValueFormats`."""
    TOO_LARGE = "too_large"
    """Decoding the record would pass a `DecodingLimits` limit (bytes, values, time)."""
    MISSING_KEY = "missing_key"
    """The key extractor found no key in the body, or raised."""
    INVALID_PAYLOAD = "invalid_payload"
    """The model rejected the body (the reason names fields, never values)."""
    REJECTED_BY_HANDLER = "rejected_by_handler"
    """`decide` raised `PoisonMessage` (unless it named another code)."""
    INVALID_WRITES = "invalid_writes"
    """The unit of work refused a write DynamoDB would refuse (`UnitOfWorkError`)."""
    WRITE_REJECTED = "write_rejected"
    """DynamoDB rejected the writes (a `ValidationException`)."""
    CONDITION_FAILED = "condition_failed"
    """A domain condition failed and there is no `on_condition_failed` (or it kept failing)."""
    FINGERPRINT_MISMATCH = "fingerprint_mismatch"
    """The key was already completed with a different payload."""
    ENVELOPE_MISMATCH = "envelope_mismatch"
    """The body is not the envelope the consumer names (`InboxConsumer(..., envelope=...)`)."""
    UNTRUSTED_SENDER = "untrusted_sender"
    """A copy of another sender's message, from a sender that is no trusted redriver."""
    # Leased mode (docs/concepts.md, "Leased mode").
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"
    """Leased mode: claimed `max_attempts` times without completing."""
    LEASE_EXPIRED = "lease_expired"
    """Set by the reaper: a lease expired and its message never came back."""
    # Failures: reported in batchItemFailures, redelivered by the event source.
    INBOX_UNAVAILABLE = "inbox_unavailable"
    """The batch's read of the inbox failed: the whole batch is reported."""
    DYNAMODB_UNAVAILABLE = "dynamodb_unavailable"
    """The transaction met a missing table or a permission error."""
    RETRIES_EXHAUSTED = "retries_exhausted"
    """Still conflicting or throttled after every attempt of the `RetryPolicy`."""
    DEADLINE = "deadline"
    """Not enough Lambda time left to retry, commit or dead-letter."""
    HANDLER_ERROR = "handler_error"
    """The model (beyond the errors of a refusal), `decide` or `on_condition_failed` raised
    something other than `PoisonMessage`."""
    LEADER_FAILED = "leader_failed"
    """An earlier delivery of the same key in this batch did not finish (or was dead-lettered
    while committing, and this one carries another payload: processed when delivered again)."""
    IN_PROGRESS = "in_progress"
    """Leased mode: another delivery's live lease holds the record."""
    DEAD_LETTER_FAILED = "dead_letter_failed"
    """Sending to the dead-letter queue failed: retried rather than lost."""
    LEASE_LOST = "lease_lost"
    """Leased mode: the completion found the record no longer under its lease."""
    SIDE_EFFECT_FAILED = "side_effect_failed"
    """Leased mode: the side effect raised something other than `PoisonMessage`."""


class InboxError(Exception):
    """Base class of every error raised by lambda_inbox."""

    code: str = "inbox_error"
    """The error's stable code (an `ErrorCode` value for those a message can end with)."""


class ConfigurationError(InboxError, ValueError):
    """The inbox was configured inconsistently (missing table name, bad limits...)."""

    code = "configuration"
    """Its `ErrorCode`-style code, as `InboxError.code`."""


class UnsupportedEvent(InboxError, ValueError):
    """`handle` got something that is not an SQS, Kafka, Kinesis or DynamoDB Streams batch (an
    SNS event, a list, None, a mixture of sources...); the message says what was received."""

    code = "unsupported_event"
    """Its `ErrorCode`-style code, as `InboxError.code`."""


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
        """The `inbox-error-code` of the dead letter (`rejected_by_handler` unless given)."""
        self.reason = reason
        """Why, as given: the `inbox-error` attribute of the dead letter."""


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
    """Its `ErrorCode`-style code, as `InboxError.code`."""


class HandlerFailed(InboxError):
    """The user's model or handler raised: a bug or an outage, reported so the source
    retries."""

    code = ErrorCode.HANDLER_ERROR.value


class DeadlineReached(InboxError):
    """No Lambda time was left for a network call (or it did not answer in the time left); what it
    was for is reported for redelivery."""

    code = ErrorCode.DEADLINE.value


def short_error(error: BaseException) -> str:
    return truncate(f"{type(error).__name__}: {error}")


def truncate(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
