"""Root fixtures shared by unit and integration tests.

- a fake AWS environment for the whole session (no real credentials or profile can leak in);
- `local_tables`: a fresh inbox table and domain table on DynamoDB Local (per test);
- Hypothesis profiles, chosen with `HYPOTHESIS_PROFILE`: "default" (each test's own settings,
  what `make test` and a plain `pytest` run) and "check" (`make check`, the inner loop: at most
  `CHECK_MAX_EXAMPLES` examples per property, also where a test's `@settings` asks for more).

`dynamodb_local_endpoint`, `moto_server_endpoint`, `local_app` and `lambda_context` are the
testing kit's fixtures (lambda_inbox_tools.pytest_plugin), which adopters use too.
"""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

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

# The suite's heap (botocore's service models, moto's backends, pydantic's schemas) is large and
# lives as long as the session: with Python's default thresholds (700, 10, 10) the collector
# spent about a tenth of the suite's CPU traversing it (docs/PERFORMANCE.md, "The test suite's
# time").
gc.set_threshold(50_000, 20, 100)

#: The inner loop's cap on examples per property (`make check`); `make test` and `make soak` run
#: every test's own count.
CHECK_MAX_EXAMPLES = 30
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
settings.register_profile("check", max_examples=CHECK_MAX_EXAMPLES)
settings.load_profile(HYPOTHESIS_PROFILE)


def pytest_configure(config: pytest.Config) -> None:
    # Applied before collection, so modules that read the environment at import time see it.
    _apply_fake_aws_env(_session_env)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under `-q` without a terminal, pytest-xdist writes its status line "bringing up nodes..."
    when the workers start and again when they have collected (at verbosity below 0 it has no
    other text): the second is dropped."""
    reporter = session.config.pluginmanager.getplugin("terminaldistreporter")
    if reporter is None or session.config.option.verbose >= 0:
        return
    show = reporter.ensure_show_status
    shown: list[bool] = []

    def show_once() -> None:
        if not shown:
            shown.append(True)
            show()

    reporter.ensure_show_status = show_once


def pytest_unconfigure(config: pytest.Config) -> None:
    _session_env.undo()


#: A test's `record_property(COVERAGE_PROPERTY, text)` is printed at the end of the run (also
#: from xdist workers, whose own output the terminal never shows).
COVERAGE_PROPERTY = "coverage"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            for name, value in getattr(report, "user_properties", ()):
                if name == COVERAGE_PROPERTY:
                    terminalreporter.write_sep("-", f"coverage of {report.nodeid}")
                    terminalreporter.write_line(str(value))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of tests/integration, and every test that starts DynamoDB Local whatever its
    folder (directly, or through the kit's `local_app`), is an integration test: `-m "not integration"` (and `make check`) never start Java.

    Under the "check" profile, a `@given` test whose own `@settings` asks for more examples than
    the profile runs the profile's count (`@settings` would otherwise win over any profile)."""
    cap = CHECK_MAX_EXAMPLES if HYPOTHESIS_PROFILE == "check" else None
    for item in items:
        in_folder = item.path.is_relative_to(INTEGRATION_TESTS)
        fixtures = getattr(item, "fixturenames", ())
        if in_folder or "dynamodb_local_endpoint" in fixtures or "local_app" in fixtures:
            item.add_marker(pytest.mark.integration)
        if cap is not None:
            _cap_examples(item, cap)


def _cap_examples(item: pytest.Item, cap: int) -> None:
    # Hypothesis reads a `@given` test's settings from this attribute each time the test runs.
    test = getattr(item, "obj", None)
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if isinstance(own, settings) and own.max_examples > cap:
        test._hypothesis_internal_use_settings = settings(own, max_examples=cap)  # type: ignore[union-attr]


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
