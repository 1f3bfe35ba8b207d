"""The library's AWS clients and their one configuration.

botocore retries throttling itself (standard mode); the inbox retries cancellations. Timeouts
and attempts are small because no call may outlive the invocation: every call of the pipeline
also runs under `Deadline.run`, which stops waiting when the Lambda time is up, and the
`stop_past_deadline` hook (`bounded`) refuses further attempts after that (docs/bad-input.md,
"Infrastructure"). A DynamoDB or SQS call normally answers in milliseconds: 1 s to connect and
3 s to read leave ample room, and 3 attempts in all bound an abandoned call to about 12 s.

Parameter validation is off: the unit of work has already checked every request, and botocore
re-walking a 100-action transaction costs more CPU than serializing it. DynamoDB still refuses a
bad request (ValidationException), which the inbox dead-letters as `write_rejected`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import boto3
from botocore.config import Config

from lambda_inbox.deadline import stop_past_deadline

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 3},
    connect_timeout=1,
    read_timeout=3,
    tcp_keepalive=True,
    parameter_validation=False,
)
_HOOK_ID = "lambda-inbox-stop-past-deadline"

C = TypeVar("C")


def bounded(client: C) -> C:
    """`client` with the `stop_past_deadline` hook: no attempt of a call that `Deadline.run`
    bounds starts after its deadline (retries included). Idempotent."""
    events = getattr(getattr(client, "meta", None), "events", None)
    if events is not None:
        events.register_first("before-send", stop_past_deadline, unique_id=_HOOK_ID)
    return client


def dynamodb_client() -> DynamoDBClient:
    """A DynamoDB client with `CLIENT_CONFIG` (region and endpoint from boto3's settings)."""
    return boto3.client("dynamodb", config=CLIENT_CONFIG)


def sqs_client() -> SQSClient:
    """A bounded SQS client with `CLIENT_CONFIG`: built only when something is dead-lettered."""
    return bounded(boto3.client("sqs", config=CLIENT_CONFIG))
