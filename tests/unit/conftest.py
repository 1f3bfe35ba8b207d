"""Moto fixtures for the unit tests: inbox and domain tables, standard and FIFO dead-letter queues,
and the example functions loaded against them.

Everything runs inside `moto.mock_aws()`: no process, no network. Example functions are loaded
with their environment set inside the mock (their consumers read it at import; their AWS clients
are made on first use, under the mock).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import boto3
import pytest
from moto import mock_aws
from moto.core.config import default_user_config

from devkit.app_state import AppState
from devkit.handlers import load_function
from devkit.memory_aws import MemoryAws
from devkit.payloads import SAMPLE_SKUS
from lambda_inbox_tools.services.offline import REGION


#: moto's default resets boto3's default session at every mock, so each test's clients load
#: botocore's endpoint rules and service models again: about 130 ms of CPU per test. Instead the
#: unit tests share one default session of their own (`_unit_session`), put in place for each
#: test and taken away after it (with moto told not to reset it): each test still gets empty
#: moto backends (its tables and queues are made anew) and fresh clients, and no later test of
#: the worker inherits the session's cached credentials (moto's fake ones; DynamoDB Local keeps
#: one database per access key, so a local-stack test would find none of its tables).
@pytest.fixture(scope="session")
def _unit_session() -> boto3.session.Session:
    return boto3.session.Session()


@pytest.fixture(autouse=True)
def _one_boto3_session(
    monkeypatch: pytest.MonkeyPatch, _unit_session: boto3.session.Session
) -> None:
    core = {**default_user_config.get("core", {}), "reset_boto3_session": False}
    monkeypatch.setitem(default_user_config, "core", core)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", _unit_session)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[AppState]:
    """Inbox + domain tables and an SQS dead-letter queue (standard and FIFO) under moto; the
    example functions' environment points at them."""
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        state = AppState.created(dynamodb, sqs)
        for name, value in state.function_environment().items():
            monkeypatch.setenv(name, value)
        yield state


@pytest.fixture
def order_events(aws: AppState) -> ModuleType:
    """functions/order_events loaded against the moto tables and DLQ, stock seeded at 100."""
    module = load_function("order_events")
    aws.seed_stock(dict.fromkeys(SAMPLE_SKUS, 100))
    return module


@pytest.fixture
def payment_events(aws: AppState) -> ModuleType:
    """functions/payment_events loaded against the moto tables and DLQ."""
    return load_function("payment_events")


@pytest.fixture
def in_memory_aws() -> AppState:
    """Inbox + domain tables and dead-letter queues in memory (`devkit.memory_aws`): for tests
    that make many calls, or need no more of DynamoDB than it answers."""
    memory = MemoryAws()
    return AppState.created(memory.client("dynamodb"), memory.client("sqs"))
