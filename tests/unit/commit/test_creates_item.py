"""`CreatesItem`: the item is the record (lambda_inbox._commit.creates, store.created_item). One
conditional `PutItem` per new message and no inbox record; a redelivery or a resend finds its
item (a duplicate), another payload under the item's key is a conflict, an item not made by the
consumer a business outcome; poison falls back to an inbox record (MemoryAws, which answers a
failed put with the stored item as DynamoDB does: tests/unit/project/test_devkit.py)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from devkit import items
from devkit.app_state import AppState
from devkit.events import sqs_event, sqs_record
from devkit.memory_aws import MemoryAws
from lambda_inbox import (
    ConditionFailures,
    ConfigurationError,
    CreatesItem,
    InboundMessage,
    InboxConsumer,
    Leased,
    UnitOfWork,
)
from lambda_inbox.wire import parse_sqs_event

SHIPMENTS = "domain"


def shipment(body: dict[str, Any]) -> dict[str, Any]:
    return {"pk": f"ORDER#{body['order']}", "sk": "SHIPMENT", "carrier": body["carrier"]}


def body(order: int, carrier: str = "dhl") -> str:
    return json.dumps({"order": order, "carrier": carrier})


def memory_app() -> tuple[MemoryAws, AppState]:
    memory = MemoryAws()
    return memory, AppState.created(memory.client("dynamodb"), memory.client("sqs"))


def consumer(aws: AppState, decide: CreatesItem[Any] | None = None) -> InboxConsumer[Any]:
    return aws.consumer("ship", model=dict, decide=decide or CreatesItem(SHIPMENTS, shipment))


def calls_of(aws: AppState) -> Counter[str]:
    calls: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    aws.dynamodb.meta.events.register("before-parameter-build", count)
    return calls


def plain_item(aws: AppState, pk: str) -> dict[str, Any] | None:
    item = aws.item(pk, "SHIPMENT")
    return None if item is None else items.plain(item)


def _messages(consumer: InboxConsumer[Any], event: Any) -> list[InboundMessage]:
    return parse_sqs_event(event)


def test_new_messages_are_one_put_each_and_the_item_carries_the_message() -> None:
    _, aws = memory_app()
    inbox = consumer(aws)
    calls = calls_of(aws)
    records = [sqs_record(body(n), message_id=f"m-{n}") for n in range(10)]
    assert inbox.handle(sqs_event(*records)) == {"batchItemFailures": []}
    assert calls == {"PutItem": 10}
    assert aws.scan(aws.inbox) == []  # no other table written
    item = plain_item(aws, "ORDER#3")
    assert item is not None
    assert item["carrier"] == "dhl"
    assert item["inbox_consumer"] == "ship"
    assert item["inbox_message_key"].endswith("m-3")
    assert len(item["inbox_fingerprint"]) == 64
    assert item["inbox_outcome"] == "committed"


def test_a_redelivery_and_a_resend_are_duplicates_and_change_nothing() -> None:
    _, aws = memory_app()
    inbox = consumer(aws)
    inbox.handle(sqs_event(*(sqs_record(body(n), message_id=f"m-{n}") for n in range(3))))
    before = aws.scan(aws.domain)
    calls = calls_of(aws)
    redelivered = [sqs_record(body(n), message_id=f"m-{n}", receive_count=2) for n in range(3)]
    resent = [sqs_record(body(n), message_id=f"new-{n}") for n in range(3)]
    for records in (redelivered, resent):
        results = inbox.process(_messages(inbox, sqs_event(*records)))
        assert [result.outcome.value for result in results] == ["duplicate"] * 3
    assert calls == {"PutItem": 6}  # no read first, no other write
    assert aws.scan(aws.domain) == before
    assert aws.scan(aws.inbox) == []


def test_another_payload_under_the_items_key_is_dead_lettered_and_the_item_unchanged() -> None:
    memory, aws = memory_app()
    inbox = consumer(aws)
    inbox.handle(sqs_event(sqs_record(body(1), message_id="m-1")))
    before = aws.scan(aws.domain)
    results = inbox.process(_messages(inbox, sqs_event(sqs_record(body(1, "ups")))))
    assert [(r.outcome.value, r.error_code) for r in results] == [
        ("dead_lettered", "fingerprint_mismatch")
    ]
    assert aws.scan(aws.domain) == before
    (letter,) = memory.drain(aws.dlq_url)
    assert json.loads(letter["Body"]) == {"order": 1, "carrier": "ups"}
    assert aws.scan(aws.inbox) == []  # the item is the completed record


def test_an_item_the_consumer_did_not_make_is_a_business_outcome_or_poison() -> None:
    memory, aws = memory_app()
    aws.dynamodb.put_item(
        TableName=SHIPMENTS, Item={"pk": {"S": "ORDER#1"}, "sk": {"S": "SHIPMENT"}}
    )
    aws.dynamodb.put_item(
        TableName=SHIPMENTS, Item={"pk": {"S": "ORDER#2"}, "sk": {"S": "SHIPMENT"}}
    )
    seen: list[ConditionFailures] = []

    def refused(payload: dict[str, Any], failures: ConditionFailures, uow: UnitOfWork) -> None:
        seen.append(failures)
        uow.put(SHIPMENTS, {"pk": f"REFUSED#{payload['order']}", "sk": "SHIPMENT"})

    fallback = consumer(aws, CreatesItem(SHIPMENTS, shipment, on_condition_failed=refused))
    results = fallback.process(_messages(fallback, sqs_event(sqs_record(body(1)))))
    assert [r.outcome.value for r in results] == ["business_outcome"]
    assert "item" in seen[0]  # the put's label, with the stored item
    assert plain_item(aws, "REFUSED#1") is not None
    (record,) = aws.scan(aws.inbox)  # the fallback's writes commit with an inbox record
    assert record["status"]["S"] == "COMPLETED"
    plain = consumer(aws)
    results = plain.process(_messages(plain, sqs_event(sqs_record(body(2)))))
    assert [(r.outcome.value, r.error_code) for r in results] == [
        ("dead_lettered", "condition_failed")
    ]
    assert len(memory.drain(aws.dlq_url)) == 1
    assert plain_item(aws, "ORDER#2") == {"pk": "ORDER#2", "sk": "SHIPMENT"}


def test_poison_and_refused_items_fall_back_to_an_inbox_record() -> None:
    memory, aws = memory_app()

    def reserved(payload: dict[str, Any]) -> dict[str, Any]:
        return {**shipment(payload), "inbox_consumer": "me"}

    for decide, event in (
        (CreatesItem(SHIPMENTS, shipment), sqs_event(sqs_record("{not json"))),
        (CreatesItem(SHIPMENTS, reserved), sqs_event(sqs_record(body(5)))),
        (CreatesItem(SHIPMENTS, lambda payload: [1]), sqs_event(sqs_record(body(6)))),  # type: ignore[arg-type, return-value]
    ):
        inbox = consumer(aws, decide)
        (result,) = inbox.process(_messages(inbox, event))
        assert result.outcome.value == "dead_lettered"
    assert len(memory.drain(aws.dlq_url)) == 3
    statuses = [record["status"]["S"] for record in aws.scan(aws.inbox)]
    assert statuses == ["FAILED"] * 3
    assert aws.scan(aws.domain) == []


def test_in_a_transaction_the_batch_is_one_request_all_or_nothing() -> None:
    _, aws = memory_app()
    aws.dynamodb.put_item(
        TableName=SHIPMENTS, Item={"pk": {"S": "ORDER#9"}, "sk": {"S": "SHIPMENT"}}
    )
    inbox = consumer(aws, CreatesItem(SHIPMENTS, shipment, transaction=True))
    calls = calls_of(aws)
    inbox.handle(sqs_event(*(sqs_record(body(n), message_id=f"m-{n}") for n in range(3))))
    assert calls == {"TransactWriteItems": 1}
    assert len(aws.scan(aws.domain)) == 4
    again = [sqs_record(body(n), message_id=f"m-{n}") for n in (0, 9)]
    results = inbox.process(_messages(inbox, sqs_event(*again)))
    assert [(r.outcome.value, r.error_code) for r in results] == [
        ("duplicate", None),
        ("dead_lettered", "condition_failed"),
    ]


def test_construction_refuses_what_cannot_work() -> None:
    _, aws = memory_app()
    with pytest.raises(ConfigurationError, match="table name"):
        CreatesItem("", shipment)
    with pytest.raises(ConfigurationError, match="callable item"):
        CreatesItem(SHIPMENTS, "pk")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="leased mode"):
        aws.consumer(
            "ship",
            model=dict,
            decide=CreatesItem(SHIPMENTS, shipment),
            leased=Leased(lambda payload, lease: None),
        )
