"""The testing kit's DynamoDB failures (`CrashSwitch` armed with "dynamodb"): each is what the
SDK hands over from DynamoDB, the modelled exception with the fields botocore parses into it,
and what DynamoDB did not write is not written."""

from __future__ import annotations

import random
from typing import Any

import pytest

from devkit.memory_aws import MemoryAws
from devkit.tables import create_domain_table
from lambda_inbox_tools.testing import CrashSwitch


@pytest.fixture
def client() -> Any:
    dynamodb = MemoryAws().botocore_client("dynamodb")
    create_domain_table(dynamodb, "t")
    return dynamodb


def item(sk: str) -> dict[str, Any]:
    return {"pk": {"S": "P"}, "sk": {"S": sk}}


def stored(client: Any) -> set[str]:
    return {i["sk"]["S"] for i in client.scan(TableName="t")["Items"]}


def armed(client: Any, seed: int, kind: Any = "dynamodb") -> CrashSwitch:
    switch = CrashSwitch([client], random.Random(seed))
    switch.start()
    switch.arm(kind, 1)
    return switch


@pytest.mark.parametrize("seed", range(6))
def test_a_transaction_is_cancelled_for_a_conflict_or_throttling_on_one_action(
    client: Any, seed: int
) -> None:
    switch = armed(client, seed)
    actions = [{"Put": {"TableName": "t", "Item": item(f"I-{n}")}} for n in range(3)]
    with pytest.raises(client.exceptions.TransactionCanceledException) as raised:
        client.transact_write_items(TransactItems=actions)
    codes = [reason["Code"] for reason in raised.value.response["CancellationReasons"]]
    assert len(codes) == 3 and codes.count("None") == 2
    (reason,) = (code for code in codes if code != "None")
    assert reason in ("TransactionConflict", "ThrottlingError")
    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert switch.answered == [f"TransactionCanceledException[{reason}]"]
    assert stored(client) == set()
    client.transact_write_items(TransactItems=actions)  # one fault only
    assert stored(client) == {"I-0", "I-1", "I-2"}


def test_both_cancellation_reasons_are_drawn() -> None:
    dynamodb = MemoryAws().botocore_client("dynamodb")
    create_domain_table(dynamodb, "t")
    reasons = set()
    for seed in range(20):
        switch = armed(dynamodb, seed)
        with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
            dynamodb.transact_write_items(
                TransactItems=[{"Put": {"TableName": "t", "Item": item("I")}}]
            )
        reasons.update(switch.answered)
        switch.remove()
    assert reasons == {
        "TransactionCanceledException[TransactionConflict]",
        "TransactionCanceledException[ThrottlingError]",
    }


@pytest.mark.parametrize("operation", ["put_item", "update_item", "delete_item"])
def test_a_single_write_meets_a_transaction_in_progress(client: Any, operation: str) -> None:
    switch = armed(client, 0)
    params: dict[str, Any] = {"Item": item("I")} if operation == "put_item" else {"Key": item("I")}
    with pytest.raises(client.exceptions.TransactionConflictException):
        getattr(client, operation)(TableName="t", **params)
    assert switch.answered == ["TransactionConflictException"]
    assert stored(client) == set()


@pytest.mark.parametrize("seed", range(8))
def test_a_batch_write_leaves_some_items_unprocessed_and_writes_the_rest(
    client: Any, seed: int
) -> None:
    switch = armed(client, seed)
    names = {f"I-{n}" for n in range(6)}
    answer = client.batch_write_item(
        RequestItems={"t": [{"PutRequest": {"Item": item(name)}} for name in sorted(names)]}
    )
    left = {r["PutRequest"]["Item"]["sk"]["S"] for r in answer["UnprocessedItems"].get("t", [])}
    assert left and left <= names
    assert stored(client) == names - left
    assert switch.answered == ["UnprocessedItems"]
    client.batch_write_item(RequestItems=answer["UnprocessedItems"])  # sent again: all written
    assert stored(client) == names


def test_a_failure_after_the_sdks_retries_is_the_modelled_exception(client: Any) -> None:
    armed(client, 0, "error")
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException):
        client.put_item(TableName="t", Item=item("I"))
    assert stored(client) == set()
