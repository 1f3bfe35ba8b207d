"""Acceptance on DynamoDB Local: the Powertools batch handler migrated as docs/powertools.md shows
it (the page's own block, run as the page shows it) costs one `TransactWriteItems` per new
10-record SQS batch and one `BatchGetItem` when it comes again, and passes the testing kit's
effectively-once check (crashes, lost answers, redeliveries) on the real transaction engine."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.doc_snippets import snippets
from devkit.meters import RequestMeter
from devkit.paths import REPO_ROOT
from devkit.tables import delete_table
from lambda_inbox_tools.testing import (
    check_effectively_once,
    delivered_again,
    payload,
    sqs_event,
    sqs_record,
)

pytestmark = pytest.mark.integration

#: The page's blocks: the envelopes, the handler before, the handler after.
MIGRATED = snippets(REPO_ROOT / "docs" / "powertools.md", REPO_ROOT)[2]


@pytest.fixture
def migrated(aws: AppState, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The page's migrated handler, its `ORDERS_TABLE` (key `pk`) on DynamoDB Local."""
    orders = f"orders-{uuid.uuid4().hex[:12]}"
    aws.dynamodb.create_table(
        TableName=orders,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    monkeypatch.setenv("ORDERS_TABLE", orders)
    namespace: dict[str, Any] = {"__name__": "app"}
    exec(MIGRATED.compiled(), namespace)  # the page's own code
    namespace["amounts"] = lambda: {
        item["pk"]["S"]: int(item["amount_cents"]["N"])
        for item in aws.dynamodb.scan(TableName=orders, ConsistentRead=True)["Items"]
    }
    try:
        yield namespace
    finally:
        delete_table(aws.dynamodb, orders)


def placed(n: int) -> dict[str, Any]:
    return {"event_id": f"evt-{n}", "order_id": f"O-{n}", "amount_cents": 100}


def test_a_new_batch_of_ten_is_one_request(migrated: dict[str, Any]) -> None:
    handler, client = migrated["handler"], migrated["processor"].consumer.dynamodb
    records = [sqs_record(placed(n)) for n in range(10)]
    meter = RequestMeter(client)
    try:
        assert handler(sqs_event(*records), None) == {"batchItemFailures": []}
        assert meter.operations() == ["TransactWriteItems"]
        meter.clear()
        again = sqs_event(*map(delivered_again, records))
        assert handler(again, None) == {"batchItemFailures": []}
        assert meter.operations() == ["BatchGetItem"]
    finally:
        meter.detach(client)
    assert migrated["amounts"]() == {f"ORDER#O-{n}": 100 for n in range(10)}


def test_the_migrated_handler_is_effectively_once(migrated: dict[str, Any]) -> None:
    report = check_effectively_once(
        migrated["handler"],
        [sqs_record(placed(n)) for n in range(20)],
        effects=lambda: {pk: cents // 100 for pk, cents in migrated["amounts"]().items()},
        key=lambda record: f"ORDER#{payload(record)['order_id']}",
        clients=[migrated["processor"].consumer.dynamodb],
        seed=3,
    )
    assert report.duplicates and report.new_ids and report.crashes
