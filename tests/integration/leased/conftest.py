"""Fixtures of the leased-mode and reaper tests: tables on DynamoDB Local, DLQs on a moto
server, and the environment of the customer-notifications function."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from devkit.tables import LocalTables
from lambda_inbox_tools.services.offline import local_client


@pytest.fixture
def dlq_url(moto_server_endpoint: str) -> Iterator[str]:
    client = local_client("sqs", moto_server_endpoint)
    url = client.create_queue(QueueName=f"notification-dlq-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    try:
        yield url
    finally:
        client.delete_queue(QueueUrl=url)


@pytest.fixture
def leased_env(
    local_tables: LocalTables,
    dynamodb_local_endpoint: str,
    moto_server_endpoint: str,
    dlq_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> LocalTables:
    monkeypatch.setenv("INBOX_TABLE", local_tables.inbox)
    monkeypatch.setenv("DOMAIN_TABLE", local_tables.domain)
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", dlq_url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_local_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", moto_server_endpoint)
    return local_tables
