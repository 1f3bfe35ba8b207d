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

A consumer's clients are made on first use (`on_first_use`), not when it is constructed: a
handler module imported before a test starts moto (`mock_aws()`) then talks to moto, and
the client is made with the credentials, region and endpoint in force at the first call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import boto3
from botocore.config import Config

from lambda_inbox._internal.deadline import stop_past_deadline

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


class _OnFirstUse:
    """Stands for the client `make()` returns, made on the first attribute read (thread-safe)."""

    __slots__ = ("_client", "_lock", "_make")

    def __init__(self, make: Callable[[], object]) -> None:
        self._make = make
        self._client: object | None = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if name in _OnFirstUse.__slots__ or name.startswith("__"):  # not set yet, or a protocol
            raise AttributeError(name)
        client = self._client
        if client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._make()
                client = self._client
        return getattr(client, name)

    def __repr__(self) -> str:
        made = "made" if self._client is not None else "not made yet"
        return f"<client on first use ({made}): {self._make!r}>"


def on_first_use(make: Callable[[], C]) -> C:
    """A stand-in for the client `make()` returns, which calls `make` on its first use."""
    return cast("C", _OnFirstUse(make))


def bounded_dynamodb_client() -> DynamoDBClient:
    """A bounded DynamoDB client with `CLIENT_CONFIG`, made on its first call."""
    return on_first_use(lambda: bounded(dynamodb_client()))


def bounded_sqs_client() -> SQSClient:
    """A bounded SQS client with `CLIENT_CONFIG`, made on its first call."""
    return on_first_use(sqs_client)
