"""`PowertoolsIdempotency` on an `InboxConsumer` (in-memory AWS): during the window a message
Powertools completed is recorded and not applied, one it left in progress or never saw is
applied, and other conditions keep their outcome; after `until` nothing is checked. The keys are
pinned to the ones Powertools itself writes by the cut-over in tests/unit/docs/test_doc_snippets.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
)

from devkit.app_state import AppState
from lambda_inbox import (
    ConditionFailures,
    ConfigurationError,
    CreatesItem,
    Decide,
    PowertoolsIdempotency,
    UnitOfWork,
)
from lambda_inbox_tools.testing import sqs_event, sqs_record

IDEMPOTENCY = "idempotency"


@pytest.fixture
def aws(in_memory_aws: AppState) -> AppState:
    """In memory, with the Powertools idempotency table too."""
    state = in_memory_aws
    state.dynamodb.create_table(
        TableName=IDEMPOTENCY,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
    )
    return state


def migration(**options: Any) -> PowertoolsIdempotency:
    return PowertoolsIdempotency(
        DynamoDBPersistenceLayer(table_name=IDEMPOTENCY, boto3_client=object()),  # type: ignore[arg-type]
        IdempotencyConfig(event_key_jmespath="event_id"),
        function="app.record_order",
        **options,
    )


def recorded(aws: AppState, bridge: PowertoolsIdempotency, order: str, status: str) -> None:
    """What Powertools wrote for `order` (its status only: the rest is not read)."""
    key = bridge.idempotency_key({"event_id": f"e-{order}", "order_id": order})
    aws.dynamodb.put_item(
        TableName=IDEMPOTENCY, Item={"id": {"S": str(key)}, "status": {"S": status}}
    )


def consumer(aws: AppState, bridge: PowertoolsIdempotency, decide: Any = None) -> Any:
    def apply(order: dict[str, Any], uow: UnitOfWork) -> None:
        aws.count_applied(uow, order["order_id"])

    return aws.consumer(
        "orders",
        model=dict,
        decide=decide or apply,
        key="event_id",
        config={"migrating_from": bridge},
    )


def deliver(inbox: Any, *orders: str) -> dict[str, Any]:
    bodies = [{"event_id": f"e-{order}", "order_id": order} for order in orders]
    response: dict[str, Any] = inbox.handle(sqs_event(*map(sqs_record, bodies)))
    return response


def test_what_powertools_completed_is_recorded_not_applied(aws: AppState) -> None:
    bridge = migration()
    recorded(aws, bridge, "done", "COMPLETED")
    recorded(aws, bridge, "crashed", "INPROGRESS")
    inbox = consumer(aws, bridge)
    assert deliver(inbox, "done", "crashed", "new") == {"batchItemFailures": []}
    assert [aws.applied(o) for o in ("done", "crashed", "new")] == [0, 1, 1]
    assert set(aws.inbox_records("orders")) == {"e-done", "e-crashed", "e-new"}
    deliver(inbox, "done", "crashed", "new")  # again: the inbox's duplicates now
    assert [aws.applied(o) for o in ("done", "crashed", "new")] == [0, 1, 1]


def test_after_the_window_nothing_is_checked(aws: AppState) -> None:
    bridge = migration(until=datetime.now(UTC) - timedelta(seconds=1))
    recorded(aws, bridge, "done", "COMPLETED")
    deliver(consumer(aws, bridge), "done")
    assert aws.applied("done") == 1  # the check is gone: Powertools' record is not read


def test_other_failed_conditions_keep_their_outcome(aws: AppState) -> None:
    bridge = migration()
    recorded(aws, bridge, "done", "COMPLETED")

    def reserve(order: dict[str, Any], uow: UnitOfWork) -> None:
        uow.condition_check(
            aws.domain, {"pk": "STOCK", "sk": "S"}, "attribute_exists(pk)", label="stock"
        )

    rejected: list[str] = []

    def reject(order: dict[str, Any], failed: ConditionFailures, uow: UnitOfWork) -> None:
        rejected.append(order["order_id"])

    with_outcome = consumer(aws, bridge, Decide(reserve, on_condition_failed=reject))
    assert deliver(with_outcome, "done", "short") == {"batchItemFailures": []}
    assert rejected == ["short"]
    without = aws.consumer(
        "bare", model=dict, decide=reserve, key="event_id", config={"migrating_from": bridge}
    )
    (result,) = without.process(
        without.sources[1].messages(sqs_event(sqs_record({"event_id": "x"})))
    )
    assert result.error_code == "condition_failed"
    assert "stock (no on_condition_failed handler)" in str(result.detail)


def test_a_creates_item_consumer_cannot_migrate_through_an_inbox_record(aws: AppState) -> None:
    """Powertools' record is checked in the transaction of an inbox record, which a
    `CreatesItem` consumer does not write: refused when built, not found out in the cut-over."""
    creates: CreatesItem[dict[str, Any]] = CreatesItem(
        "domain", lambda order: {"pk": order["order_id"], "sk": "O"}
    )
    with pytest.raises(ConfigurationError, match="CreatesItem has no migrating_from"):
        consumer(aws, migration(), decide=creates)
