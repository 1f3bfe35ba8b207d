"""Fixtures of the integration tests: the example application on DynamoDB Local (tables) and a
moto server (the dead-letter queue).

`aws` points the functions' environment (INBOX_TABLE, DOMAIN_TABLE, DEAD_LETTER_QUEUE_URL,
AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS) at fresh tables and a fresh dead-letter queue;
tests load the functions with `devkit.handlers.load_function` afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from devkit.app_state import AppState
from devkit.tables import LocalTables
from lambda_inbox_tools.services.offline import local_client
from lambda_inbox_tools.services.queues import create_queue


@pytest.fixture
def dlq_url(moto_server_endpoint: str) -> Iterator[str]:
    """A fresh, uniquely named standard queue on the moto server, deleted afterwards."""
    client = local_client("sqs", moto_server_endpoint)
    url = create_queue(client, f"inbox-dlq-{uuid.uuid4().hex[:12]}")
    try:
        yield url
    finally:
        client.delete_queue(QueueUrl=url)


@pytest.fixture
def aws(
    local_tables: LocalTables,
    moto_server_endpoint: str,
    dlq_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> AppState:
    """Fresh inbox and domain tables on DynamoDB Local and a DLQ on the moto server; the example
    functions' environment points at them."""
    state = AppState(
        local_tables.client,
        local_client("sqs", moto_server_endpoint),
        inbox=local_tables.inbox,
        domain=local_tables.domain,
        dlq_url=dlq_url,
        endpoints={"dynamodb": local_tables.endpoint, "sqs": moto_server_endpoint},
    )
    for name, value in state.function_environment().items():
        monkeypatch.setenv(name, value)
    return state
