"""The check's overlapping invocations: their DynamoDB requests take turns, as DynamoDB's own
requests are each atomic, and a crash injected after a call does not keep the turn."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lambda_inbox_tools.services.offline import REGION
from lambda_inbox_tools.testing.check.overlap import overlapping


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        client.create_table(
            TableName="t",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        )
        yield client


class _Inside:
    """Counts the requests inside the backend at once (`before-send` runs within the call)."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.lock = threading.Lock()

    def __call__(self, **_: Any) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.02)  # a request long enough for the other thread to try its own
        with self.lock:
            self.now -= 1


def _puts_and_gets(client: Any, name: str) -> int:
    for n in range(4):
        client.put_item(TableName="t", Item={"pk": {"S": f"{name}-{n}"}})
        client.get_item(TableName="t", Key={"pk": {"S": f"{name}-{n}"}})
    return 4


def test_the_overlapping_invocations_requests_take_turns(dynamodb: Any) -> None:
    inside = _Inside()
    dynamodb.meta.events.register("before-send.dynamodb", inside)
    calls = [lambda: _puts_and_gets(dynamodb, "a"), lambda: _puts_and_gets(dynamodb, "b")]
    assert overlapping(calls, [dynamodb]) == [4, 4]
    assert inside.most == 1
    # Outside the overlap nothing takes turns: the same two threads meet inside the backend.
    threads = [threading.Thread(target=call) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert inside.most == 2


def test_a_crash_after_a_call_does_not_keep_the_turn(dynamodb: Any) -> None:
    def crash(**_: Any) -> None:
        raise RuntimeError("injected: crash after PutItem")

    dynamodb.meta.events.register("after-call.dynamodb.PutItem", crash)

    def invocation(name: str) -> str:
        with pytest.raises(RuntimeError):
            dynamodb.put_item(TableName="t", Item={"pk": {"S": name}})
        return str(dynamodb.get_item(TableName="t", Key={"pk": {"S": name}})["Item"]["pk"]["S"])

    results: list[Any] = []
    runner = threading.Thread(
        target=lambda: results.append(
            overlapping([lambda: invocation("a"), lambda: invocation("b")], [dynamodb])
        )
    )
    runner.start()
    runner.join(timeout=20)
    assert not runner.is_alive(), "the overlapping invocations deadlocked"
    assert results == [["a", "b"]]
