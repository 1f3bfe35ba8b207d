"""Commit one group of messages in a single `TransactWriteItems` and classify what happened.

Each prepared request gets a random `ClientRequestToken` of its own: re-sending the same request
after a timeout cannot apply it twice (DynamoDB answers success for a token it has already
committed in the last 10 minutes), while a redelivery builds a new request, with a new token,
and meets the inbox condition.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: Cancellation reason codes that clear up on their own.
TRANSIENT_REASONS = frozenset(
    {
        "TransactionConflict",
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
        "RequestLimitExceeded",
        "InternalServerError",
    }
)
#: Cancellation reason codes that say this message's writes are invalid, whatever the timing.
REJECTED_REASONS = frozenset({"ValidationError", "ItemCollectionSizeLimitExceeded"})
#: Error codes for a whole request that retrying inside the invocation will not fix.
UNAVAILABLE_ERRORS = frozenset(
    {
        "ResourceNotFoundException",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "MissingAuthenticationTokenException",
    }
)


class CommitStatus:
    """What became of one sending (`CommitAttempt.status`): text constants, not an enum (an
    enum class costs cold start, and a status never leaves the library)."""

    COMMITTED = "committed"
    #: DynamoDB cancelled the transaction; `reasons` has one entry per action.
    CANCELLED = "cancelled"
    #: Throttled, 5xx, timeout or connection error: the same request may be sent again.
    TRANSIENT = "transient"
    #: Missing table, missing permission: report for redelivery, do not retry now.
    UNAVAILABLE = "unavailable"
    #: The request itself is invalid (ValidationException).
    REJECTED = "rejected"


#: One of a cancelled request's `CancellationReasons`, as DynamoDB answers it: `Code` ("None"
#: for an action that did not fail), `Message`, and `Item` (the stored item, `ALL_OLD`).
Reason = Mapping[str, Any]


def reason_code(reason: Reason) -> str:
    """A reason's code; "None" also where DynamoDB left it out."""
    return str(reason.get("Code") or "None")


class CommitAttempt:
    """What one sending came to: its `status` (a `CommitStatus`), a cancelled request's
    `reasons` (one per action, in order), the error and the time it took."""

    __slots__ = ("error", "latency_ms", "reasons", "status")

    def __init__(
        self,
        status: str,
        reasons: tuple[Reason, ...] = (),
        error: str = "",
        latency_ms: float = 0.0,
    ) -> None:
        self.status = status
        self.reasons = reasons
        self.error = error
        self.latency_ms = latency_ms


class PreparedTransaction:
    """A request ready to send; kept intact so a retry after a timeout reuses its token.

    The token is random (36 hex characters, the most DynamoDB takes): it must be the same for
    every sending of this request and differ from every other request's, which a digest of the
    request also gives, at the cost of encoding the whole request once more."""

    def __init__(self, transact_items: list[dict[str, Any]]) -> None:
        self.transact_items = transact_items
        self.token = os.urandom(18).hex()


class PreparedPut:
    """A `CreatesItem` put sent alone. It has no request token: a put sent again after a
    timeout that had landed finds its own item, the same consumer's with the same fingerprint,
    and is a duplicate."""

    __slots__ = ("request",)

    def __init__(self, request: Mapping[str, Any]) -> None:
        self.request = request


def send(client: DynamoDBClient, prepared: PreparedTransaction | PreparedPut) -> CommitAttempt:
    """Send one transaction (or one put); never raises for DynamoDB or network errors."""
    started = time.perf_counter()

    def elapsed() -> float:
        return (time.perf_counter() - started) * 1000

    try:
        if isinstance(prepared, PreparedPut):
            client.put_item(**prepared.request)
        else:
            client.transact_write_items(
                TransactItems=prepared.transact_items,  # type: ignore[arg-type]
                ClientRequestToken=prepared.token,
            )
    except ClientError as error:
        attempt = classify_client_error(error, elapsed())
        if attempt.status == CommitStatus.UNAVAILABLE:  # name the tables of a missing one
            from lambda_inbox._internal.table_names import described, tables_of

            tables = (
                [str(prepared.request["TableName"])]
                if isinstance(prepared, PreparedPut)
                else tables_of(prepared.transact_items)
            )
            named = described(error, tables)
            attempt = CommitAttempt(attempt.status, attempt.reasons, named, attempt.latency_ms)
        return attempt
    except ParamValidationError as error:  # refused before sending: resending cannot help
        return CommitAttempt(CommitStatus.REJECTED, error=str(error), latency_ms=elapsed())
    except BotoCoreError as error:  # timeouts, connection resets: the outcome is unknown
        return CommitAttempt(
            CommitStatus.TRANSIENT, error=f"{type(error).__name__}: {error}", latency_ms=elapsed()
        )
    return CommitAttempt(CommitStatus.COMMITTED, latency_ms=elapsed())


def classify_client_error(error: ClientError, latency_ms: float = 0.0) -> CommitAttempt:
    details = error.response.get("Error", {})
    code = str(details.get("Code", ""))
    message = f"{code}: {details.get('Message', '')}"
    if code == "TransactionCanceledException":
        reasons = _reasons(dict(error.response))
        return CommitAttempt(CommitStatus.CANCELLED, reasons, message, latency_ms)
    if (
        code == "ConditionalCheckFailedException"
    ):  # a put sent alone: one reason, as a transaction's
        stored = dict(error.response).get("Item")
        reason = {"Code": "ConditionalCheckFailed", "Message": message, "Item": stored}
        return CommitAttempt(CommitStatus.CANCELLED, (reason,), message, latency_ms)
    if code in UNAVAILABLE_ERRORS:
        return CommitAttempt(CommitStatus.UNAVAILABLE, error=message, latency_ms=latency_ms)
    if code == "ValidationException":
        return CommitAttempt(CommitStatus.REJECTED, error=message, latency_ms=latency_ms)
    # Throttling, 5xx, TransactionInProgress (our own token still running), anything unknown.
    return CommitAttempt(CommitStatus.TRANSIENT, error=message, latency_ms=latency_ms)


def _reasons(response: dict[str, Any]) -> tuple[Reason, ...]:
    return tuple(response.get("CancellationReasons") or ())
