"""The processing model end to end through functions/order_events on moto.

Each test drives the real handler (or its consumer's `process`) with SQS events and checks the
partial batch response, the inbox records, the domain items and the dead-letter queue.
"""

from __future__ import annotations

import json
import time
from types import ModuleType
from typing import Any

import pytest

from lambda_inbox import MessageResult, Outcome
from lambda_inbox.sqs import parse_sqs_event
from tests.support.handlers import load_function
from tests.unit.conftest import MotoAws
from tests.unit.helpers import (
    domain_item,
    drain,
    inbox_item,
    load_event,
    order,
    order_body,
    scan_all,
    sent_attributes,
    sqs_event,
    sqs_record,
    stock_of,
)

CONSUMER = "order-events"


def process(module: ModuleType, event: dict[str, Any]) -> list[MessageResult]:
    results: list[MessageResult] = module.consumer.process(parse_sqs_event(event))
    return results


def outcomes(results: list[MessageResult]) -> list[Outcome]:
    return [result.outcome for result in results]


def all_stock(aws: MotoAws) -> dict[str, tuple[int, int]]:
    return {
        sku: stock_of(aws.dynamodb, aws.domain, sku)
        for sku in ("SKU-RED-MUG", "SKU-BLUE-CAP", "SKU-GREEN-PEN")
    }


def record_of(aws: MotoAws, key: str) -> dict[str, Any]:
    item = inbox_item(aws.dynamodb, aws.inbox, CONSUMER, key)
    assert item is not None, f"no inbox record for {key}"
    return item


def test_single_order_commits_with_its_effects(aws: MotoAws, order_events: ModuleType) -> None:
    response = order_events.handler(load_event("sqs-order-single.json"), None)
    assert response == {"batchItemFailures": []}
    assert stock_of(aws.dynamodb, aws.domain, "SKU-RED-MUG") == (99, 1)
    assert stock_of(aws.dynamodb, aws.domain, "SKU-BLUE-CAP") == (99, 1)
    shipment = domain_item(aws.dynamodb, aws.domain, "ORDER#ord-1001", "SHIPMENT")
    assert shipment is not None and shipment["status"] == {"S": "PENDING"}
    record = record_of(aws, "evt-order-0001")
    assert record["status"] == {"S": "COMPLETED"}
    assert json.loads(record["result"]["S"]) == {"outcome": "reserved"}
    assert int(record["expires_at"]["N"]) > time.time() + 6 * 24 * 3600
    assert drain(aws.sqs, aws.dlq_url) == []


def test_redelivery_is_a_duplicate_with_same_or_new_message_id(
    aws: MotoAws, order_events: ModuleType
) -> None:
    event = load_event("sqs-order-single.json")
    assert outcomes(process(order_events, event)) == [Outcome.COMMITTED]
    before = all_stock(aws)
    assert outcomes(process(order_events, event)) == [Outcome.DUPLICATE]
    retried = json.loads(json.dumps(event))
    retried["Records"][0]["messageId"] = "another-message-id"
    (result,) = process(order_events, retried)
    assert (result.outcome, result.message_key) == (Outcome.DUPLICATE, "evt-order-0001")
    assert all_stock(aws) == before
    assert order_events.handler(retried, None) == {"batchItemFailures": []}


def test_in_batch_duplicates_follow_their_leader(aws: MotoAws, order_events: ModuleType) -> None:
    results = process(order_events, load_event("sqs-order-batch-duplicates.json"))
    assert outcomes(results) == [Outcome.COMMITTED] * 4 + [Outcome.DUPLICATE] * 2
    assert [r.message_key for r in results[4:]] == ["evt-order-0101", "evt-order-0102"]
    assert all_stock(aws) == {
        "SKU-RED-MUG": (97, 3),
        "SKU-BLUE-CAP": (98, 2),
        "SKU-GREEN-PEN": (95, 5),
    }


def test_in_batch_follower_with_a_different_payload_is_dead_lettered(
    aws: MotoAws, order_events: ModuleType
) -> None:
    first = sqs_record(order_body("evt-1", "ord-1", [("SKU-RED-MUG", 1)]))
    changed = sqs_record(order_body("evt-1", "ord-1", [("SKU-RED-MUG", 5)]))
    results = process(order_events, sqs_event(first, changed))
    assert outcomes(results) == [Outcome.COMMITTED, Outcome.DEAD_LETTERED]
    assert results[1].error_code == "fingerprint_mismatch"
    assert stock_of(aws.dynamodb, aws.domain, "SKU-RED-MUG") == (99, 1)
    (dead,) = drain(aws.sqs, aws.dlq_url)
    assert dead["Body"] == changed["body"]


def test_fingerprint_mismatch_is_dead_lettered_and_the_record_untouched(
    aws: MotoAws, order_events: ModuleType
) -> None:
    process(order_events, load_event("sqs-order-single.json"))
    before = record_of(aws, "evt-order-0001")
    stock = all_stock(aws)
    conflicting = sqs_record(order_body("evt-order-0001", "ord-9999", [("SKU-GREEN-PEN", 3)]))
    response = order_events.handler(sqs_event(conflicting), None)
    assert response == {"batchItemFailures": []}
    (dead,) = drain(aws.sqs, aws.dlq_url)
    assert dead["Body"] == conflicting["body"]
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "fingerprint_mismatch"
    assert dead["MessageAttributes"]["inbox-message-key"]["StringValue"] == "evt-order-0001"
    assert record_of(aws, "evt-order-0001") == before
    assert all_stock(aws) == stock
    assert domain_item(aws.dynamodb, aws.domain, "ORDER#ord-9999", "SHIPMENT") is None


def test_poison_records_are_dead_lettered_unchanged_and_the_rest_commits(
    aws: MotoAws, order_events: ModuleType
) -> None:
    event = load_event("sqs-order-poison.json")
    records = event["Records"]
    results = process(order_events, event)
    assert [(r.outcome, r.error_code, r.message_key) for r in results] == [
        (Outcome.COMMITTED, None, "evt-order-0201"),
        (Outcome.DEAD_LETTERED, "malformed_json", records[1]["messageId"]),
        (Outcome.DEAD_LETTERED, "invalid_payload", "evt-order-0203"),
        (Outcome.DEAD_LETTERED, "invalid_payload", "evt-order-0204"),
        (Outcome.COMMITTED, None, "evt-order-0205"),
    ]
    assert all_stock(aws) == {
        "SKU-RED-MUG": (100, 0),  # record 4 (RED-MUG 1, GREEN-PEN 0) changed nothing
        "SKU-BLUE-CAP": (99, 1),
        "SKU-GREEN-PEN": (98, 2),
    }
    dead = {
        m["MessageAttributes"]["inbox-message-key"]["StringValue"]: m
        for m in drain(aws.sqs, aws.dlq_url)
    }
    for record, result in zip(records[1:4], results[1:4], strict=True):
        assert result.message_key is not None
        received = dead[result.message_key]
        assert received["Body"].encode("utf-8") == record["body"].encode("utf-8")
        attributes = received["MessageAttributes"]
        assert {k: v for k, v in attributes.items() if not k.startswith("inbox-")} == (
            sent_attributes(record)
        )
        assert attributes["inbox-error-code"]["StringValue"] == result.error_code
        stored = record_of(aws, result.message_key)
        assert stored["status"] == {"S": "FAILED"}
        assert stored["error_code"] == {"S": result.error_code}
        assert "expires_at" not in stored
        assert stored["payload_snapshot"] == {"B": record["body"].encode("utf-8")}
    assert len(dead) == 3


def test_poison_is_not_reported_in_batch_item_failures(
    aws: MotoAws, order_events: ModuleType
) -> None:
    assert order_events.handler(load_event("sqs-order-poison.json"), None) == {
        "batchItemFailures": []
    }
    assert len(drain(aws.sqs, aws.dlq_url)) == 3


def test_missing_key_is_dead_lettered_under_the_message_id(
    aws: MotoAws, order_events: ModuleType
) -> None:
    body = json.dumps({k: v for k, v in order("x").items() if k != "event_id"})
    record = sqs_record(body, message_id="mid-no-key")
    (result,) = process(order_events, sqs_event(record))
    assert (result.outcome, result.error_code, result.message_key) == (
        Outcome.DEAD_LETTERED,
        "missing_key",
        "mid-no-key",
    )
    (dead,) = drain(aws.sqs, aws.dlq_url)
    assert dead["Body"] == body
    assert record_of(aws, "mid-no-key")["error_code"] == {"S": "missing_key"}


def test_insufficient_stock_commits_a_rejection(aws: MotoAws, order_events: ModuleType) -> None:
    (result,) = process(order_events, load_event("sqs-order-insufficient-stock.json"))
    assert result.outcome is Outcome.BUSINESS_OUTCOME
    rejection = domain_item(aws.dynamodb, aws.domain, "ORDER#ord-1401", "REJECTION")
    assert rejection is not None and rejection["reason"] == {"S": "insufficient_stock"}
    assert domain_item(aws.dynamodb, aws.domain, "ORDER#ord-1401", "SHIPMENT") is None
    assert stock_of(aws.dynamodb, aws.domain, "SKU-RED-MUG") == (100, 0)
    assert json.loads(record_of(aws, "evt-order-0401")["result"]["S"]) == {
        "outcome": "rejected",
        "reason": "insufficient_stock",
        "skus": ["SKU-RED-MUG"],
    }
    assert drain(aws.sqs, aws.dlq_url) == []


def test_logical_duplicate_order_has_no_new_effects(aws: MotoAws, order_events: ModuleType) -> None:
    process(order_events, sqs_event(sqs_record(order_body("evt-a", "ord-7", [("SKU-RED-MUG", 2)]))))
    domain_before = scan_all(aws.dynamodb, aws.domain)
    again = sqs_record(order_body("evt-b", "ord-7", [("SKU-RED-MUG", 2)]))
    (result,) = process(order_events, sqs_event(again))
    assert result.outcome is Outcome.BUSINESS_OUTCOME
    assert scan_all(aws.dynamodb, aws.domain) == domain_before
    assert json.loads(record_of(aws, "evt-b")["result"]["S"]) == {"outcome": "logical_duplicate"}


def test_a_failed_record_is_claimable_by_a_fixed_replay(
    aws: MotoAws, order_events: ModuleType
) -> None:
    broken = dict(order("evt-fix", "ord-fix"), total_cents=-1)
    (first,) = process(order_events, sqs_event(sqs_record(json.dumps(broken))))
    assert first.outcome is Outcome.DEAD_LETTERED
    assert record_of(aws, "evt-fix")["status"] == {"S": "FAILED"}
    fixed = sqs_record(order_body("evt-fix", "ord-fix"))
    (second,) = process(order_events, sqs_event(fixed))
    assert second.outcome is Outcome.COMMITTED
    record = record_of(aws, "evt-fix")
    assert record["status"] == {"S": "COMPLETED"}
    assert "gsi_open_pk" not in record
    assert stock_of(aws.dynamodb, aws.domain, "SKU-RED-MUG") == (99, 1)


def test_an_expired_completed_record_is_treated_as_absent(
    aws: MotoAws, order_events: ModuleType
) -> None:
    event = load_event("sqs-order-single.json")
    process(order_events, event)
    aws.dynamodb.update_item(
        TableName=aws.inbox,
        Key={"pk": {"S": f"{CONSUMER}#evt-order-0001"}},
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 10)}},
    )
    (result,) = process(order_events, event)
    # Processed again: the order's own conditions make it a logical duplicate, not an inbox hit.
    assert result.outcome is Outcome.BUSINESS_OUTCOME
    record = record_of(aws, "evt-order-0001")
    assert int(record["expires_at"]["N"]) > time.time()
    assert json.loads(record["result"]["S"]) == {"outcome": "logical_duplicate"}
    assert stock_of(aws.dynamodb, aws.domain, "SKU-RED-MUG") == (99, 1)


def test_without_a_dead_letter_queue_poison_is_reported_with_a_clear_detail(
    aws: MotoAws, monkeypatch: pytest.MonkeyPatch, order_events: ModuleType
) -> None:
    monkeypatch.delenv("DEAD_LETTER_QUEUE_URL")
    module = load_function("order_events")
    event = load_event("sqs-order-poison.json")
    results = process(module, event)
    poison = results[1:4]
    assert all(r.outcome is Outcome.FAILED for r in poison)
    assert all("no dead-letter queue configured" in r.detail for r in poison)
    assert all("DEAD_LETTER_QUEUE_URL" in r.detail for r in poison)
    assert outcomes([results[0], results[4]]) == [Outcome.COMMITTED, Outcome.COMMITTED]
    assert module.handler(event, None) == {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"][1:4]]
    }
    assert drain(aws.sqs, aws.dlq_url) == []


def test_missing_inbox_table_fails_every_record_and_dead_letters_nothing(
    aws: MotoAws, monkeypatch: pytest.MonkeyPatch, order_events: ModuleType
) -> None:
    monkeypatch.setenv("INBOX_TABLE", "no-such-table")
    module = load_function("order_events")
    event = load_event("sqs-order-poison.json")
    results = process(module, event)
    assert {(r.outcome, r.error_code) for r in results} == {(Outcome.FAILED, "inbox_unavailable")}
    assert module.handler(event, None) == {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]
    }
    assert drain(aws.sqs, aws.dlq_url) == []
    assert all_stock(aws)["SKU-BLUE-CAP"] == (100, 0)


def test_fifo_sample_commits_in_order(aws: MotoAws, order_events: ModuleType) -> None:
    assert order_events.handler(load_event("sqs-order-fifo.json"), None) == {
        "batchItemFailures": []
    }
    assert all_stock(aws) == {
        "SKU-RED-MUG": (98, 2),
        "SKU-BLUE-CAP": (97, 3),
        "SKU-GREEN-PEN": (98, 2),
    }
