"""Fixtures for the order-events consumer on DynamoDB Local (tables) and a moto server (the DLQ).

`order_env` points the function's environment (INBOX_TABLE, DOMAIN_TABLE, DEAD_LETTER_QUEUE_URL,
AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS) at fresh tables and a fresh dead-letter queue;
helpers live in `support.py`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from devkit.tables import LocalTables
from tests.integration.order_events.support import OrderEventsEnv, sqs_client


@pytest.fixture
def dlq_url(moto_server_endpoint: str) -> Iterator[str]:
    """A fresh, uniquely named standard queue on the moto server, deleted afterwards."""
    client = sqs_client(moto_server_endpoint)
    url = client.create_queue(QueueName=f"order-events-dlq-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    try:
        yield url
    finally:
        client.delete_queue(QueueUrl=url)


@pytest.fixture
def order_env(
    local_tables: LocalTables,
    dynamodb_local_endpoint: str,
    moto_server_endpoint: str,
    dlq_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> OrderEventsEnv:
    """The function's environment: INBOX_TABLE, DOMAIN_TABLE, DEAD_LETTER_QUEUE_URL, endpoints."""
    monkeypatch.setenv("INBOX_TABLE", local_tables.inbox)
    monkeypatch.setenv("DOMAIN_TABLE", local_tables.domain)
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", dlq_url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_local_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", moto_server_endpoint)
    return OrderEventsEnv(
        tables=local_tables,
        dlq_url=dlq_url,
        sqs=sqs_client(moto_server_endpoint),
        monkeypatch=monkeypatch,
    )
