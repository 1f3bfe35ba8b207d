"""Classification of TransactWriteItems errors and the request-derived ClientRequestToken."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from lambda_inbox._commit.send import (
    CommitStatus,
    PreparedTransaction,
    classify_client_error,
    reason_code,
    send,
)


def client_error(code: str, **extra: Any) -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": f"{code} happened"}, **extra}
    return ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]


def test_cancellation_reasons_are_kept_per_action() -> None:
    error = client_error(
        "TransactionCanceledException",
        CancellationReasons=[
            {"Code": "None"},
            {"Code": "ConditionalCheckFailed", "Message": "failed", "Item": {"pk": {"S": "x"}}},
            {},
        ],
    )
    attempt = classify_client_error(error, 12.5)
    assert attempt.status == CommitStatus.CANCELLED
    codes = [reason_code(reason) for reason in attempt.reasons]
    assert codes == ["None", "ConditionalCheckFailed", "None"]
    assert attempt.reasons[1]["Item"] == {"pk": {"S": "x"}}
    assert attempt.reasons[1]["Message"] == "failed"
    assert attempt.latency_ms == 12.5
    assert attempt.error.startswith("TransactionCanceledException")


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ResourceNotFoundException", CommitStatus.UNAVAILABLE),
        ("AccessDeniedException", CommitStatus.UNAVAILABLE),
        ("ExpiredTokenException", CommitStatus.UNAVAILABLE),
        ("ValidationException", CommitStatus.REJECTED),
        ("ThrottlingException", CommitStatus.TRANSIENT),
        ("ProvisionedThroughputExceededException", CommitStatus.TRANSIENT),
        ("TransactionInProgressException", CommitStatus.TRANSIENT),
        ("InternalServerError", CommitStatus.TRANSIENT),
        ("SomethingNew", CommitStatus.TRANSIENT),
    ],
)
def test_error_codes_are_classified(code: str, status: str) -> None:
    attempt = classify_client_error(client_error(code))
    assert attempt.status == status
    assert attempt.error == f"{code}: {code} happened"
    assert attempt.reasons == ()


def test_each_prepared_request_has_a_token_of_its_own_kept_for_every_sending() -> None:
    items: list[dict[str, Any]] = [{"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}}}}]
    prepared = PreparedTransaction(items)
    token = prepared.token
    assert len(token) == 36
    assert all(char in "0123456789abcdef" for char in token)
    assert prepared.token == token  # every resend of this request carries it
    tokens = {PreparedTransaction(items).token for _ in range(1000)}
    assert len(tokens) == 1000  # no other request shares it, even with the same items


def test_a_request_botocore_refuses_is_rejected_not_retried() -> None:
    """ParamValidationError is a BotoCoreError, but resending the same request cannot help."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    prepared = PreparedTransaction([{"Put": {"TableName": "t", "Item": {"pk": {"Q": "bad"}}}}])
    attempt = send(client, prepared)
    assert attempt.status == CommitStatus.REJECTED
    assert "Q" in attempt.error
