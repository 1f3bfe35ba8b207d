"""Root fixtures shared by unit and integration tests.

- a fake AWS environment for the whole session (no real credentials or profile can leak in);
- `local_tables`: a fresh inbox table and domain table on DynamoDB Local (per test).

`dynamodb_local_endpoint`, `moto_server_endpoint`, `local_app` and `lambda_context` are the
testing kit's fixtures (lambda_inbox_tools.pytest_plugin), which adopters use too.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from devkit.tables import LocalTables, create_domain_table, create_inbox_table, delete_table
from lambda_inbox_tools.services.offline import (
    OFFLINE_AWS_ENV,
    inherited_aws_settings,
    local_client,
)

INTEGRATION_TESTS = Path(__file__).resolve().parent / "integration"
FAKE_AWS_ENV = {
    **OFFLINE_AWS_ENV,
    "POWERTOOLS_METRICS_NAMESPACE": "LambdaInboxTests",
    "POWERTOOLS_SERVICE_NAME": "tests",
}


def _apply_fake_aws_env(mp: pytest.MonkeyPatch) -> None:
    for key in inherited_aws_settings(os.environ):
        mp.delenv(key, raising=False)
    for key, value in FAKE_AWS_ENV.items():
        mp.setenv(key, value)


_session_env = pytest.MonkeyPatch()


def pytest_configure(config: pytest.Config) -> None:
    # Applied before collection, so modules that read the environment at import time see it.
    _apply_fake_aws_env(_session_env)


def pytest_unconfigure(config: pytest.Config) -> None:
    _session_env.undo()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of tests/integration, and every test that starts DynamoDB Local whatever its
    folder (directly, or through the kit's `local_app`), is an integration test: `-m "not integration"` (and `make check`) never start Java."""
    for item in items:
        in_folder = item.path.is_relative_to(INTEGRATION_TESTS)
        fixtures = getattr(item, "fixturenames", ())
        if in_folder or "dynamodb_local_endpoint" in fixtures or "local_app" in fixtures:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def aws_test_environment() -> Iterator[dict[str, str]]:
    """Fake AWS credentials/region and Powertools settings for the whole session."""
    with pytest.MonkeyPatch.context() as mp:
        _apply_fake_aws_env(mp)
        yield dict(FAKE_AWS_ENV)


@pytest.fixture
def local_tables(dynamodb_local_endpoint: str) -> Iterator[LocalTables]:
    """Uniquely named inbox and domain tables on DynamoDB Local, deleted after the test."""
    client = local_client("dynamodb", dynamodb_local_endpoint)
    suffix = uuid.uuid4().hex[:12]
    tables = LocalTables(
        endpoint=dynamodb_local_endpoint,
        inbox=f"inbox-{suffix}",
        domain=f"domain-{suffix}",
        client=client,
    )
    create_inbox_table(client, tables.inbox)
    create_domain_table(client, tables.domain)
    try:
        yield tables
    finally:
        for name in (tables.inbox, tables.domain):
            delete_table(client, name)
