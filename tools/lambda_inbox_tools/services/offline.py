"""The AWS environment of every local run (tests, demo, benchmarks): fake credentials, one
region, no ~/.aws files, and no inherited profile or endpoint, so nothing reaches a real account
or a developer's own endpoints. Also: clients for local endpoints (DynamoDB Local, moto server)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

REGION = "us-east-1"
#: What the local services accept as credentials: a placeholder, never a real key.
FAKE_CREDENTIAL = "testing"
ACCOUNT = "123456789012"
OFFLINE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": FAKE_CREDENTIAL,
    "AWS_SECRET_ACCESS_KEY": FAKE_CREDENTIAL,
    "AWS_SECURITY_TOKEN": FAKE_CREDENTIAL,
    "AWS_SESSION_TOKEN": FAKE_CREDENTIAL,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
_PROFILES = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")

#: Local endpoints answer fast or not at all: fail quickly, retry a little.
LOCAL_CLIENT_CONFIG = Config(
    connect_timeout=2,
    read_timeout=30,
    retries={"max_attempts": 3, "mode": "standard"},
)


def inherited_aws_settings(environ: Mapping[str, str]) -> list[str]:
    """The names in `environ` that could point a client at a real account or endpoint."""
    return [name for name in environ if name in _PROFILES or name.startswith("AWS_ENDPOINT_URL")]


def use_offline_aws(**extra: str) -> None:
    """For scripts: drop inherited profiles and endpoints from `os.environ`, then set
    `OFFLINE_AWS_ENV` and `extra` (Powertools settings, say)."""
    for name in inherited_aws_settings(os.environ):
        del os.environ[name]
    os.environ.update(OFFLINE_AWS_ENV, **extra)


@overload
def local_client(
    service: Literal["dynamodb"], endpoint: str, *, own_session: bool = False
) -> DynamoDBClient: ...


@overload
def local_client(
    service: Literal["sqs"], endpoint: str, *, own_session: bool = False
) -> SQSClient: ...


@overload
def local_client(
    service: Literal["kinesis", "sns", "events"], endpoint: str, *, own_session: bool = False
) -> Any: ...


def local_client(
    service: Literal["dynamodb", "sqs", "kinesis", "sns", "events"],
    endpoint: str,
    *,
    own_session: bool = False,
) -> DynamoDBClient | SQSClient | Any:
    """A low-level client for a local endpoint (fake credentials, fast failure, few retries).

    `own_session` keeps it off boto3's default session, so hooks registered there (request
    meters) never see its calls: set-up, probes and the reads of a demo or a benchmark.
    """
    if own_session:
        session = boto3.session.Session()
    else:
        session = boto3.DEFAULT_SESSION or boto3.session.Session()
        boto3.DEFAULT_SESSION = session
    return session.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=FAKE_CREDENTIAL,
        aws_secret_access_key=FAKE_CREDENTIAL,
        config=LOCAL_CLIENT_CONFIG,
    )


@contextlib.contextmanager
def patched_environ(changes: Mapping[str, str | None]) -> Iterator[None]:
    """Set (or, for None, remove) environment variables for the duration of the block."""
    saved = {name: os.environ.get(name) for name in changes}
    try:
        _apply(changes)
        yield
    finally:
        _apply(saved)


def _apply(values: Mapping[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
