"""Poison goes to the dead-letter queue intact; missing tables fail records for redelivery and
dead-letter nothing (DynamoDB Local for the tables, the moto server for the DLQ)."""

from __future__ import annotations

import hashlib
import time
import uuid

import pytest

from devkit.app_state import ORDER_EVENTS, AppState
from devkit.events import (
    SENDER_ID,
    delivered_again,
    failed_ids,
    load_event,
    received_attributes,
    sqs_event,
    sqs_record,
)
from devkit.handlers import load_function, process
from devkit.payloads import order
from lambda_inbox import Outcome
from lambda_inbox.store import Status, open_index_pk, open_index_shard, record_pk

pytestmark = pytest.mark.integration

ADDED_ATTRIBUTES = {"inbox-error-code", "inbox-error", "inbox-message-key", "inbox-sender"}
STOCK = {"SKU-RED-MUG": 100, "SKU-BLUE-CAP": 100, "SKU-GREEN-PEN": 100}


def test_poison_is_dead_lettered_byte_identical_and_the_rest_of_the_batch_commits(
    aws: AppState,
) -> None:
    aws.seed_stock(STOCK)
    event = load_event("sqs-order-poison.json")
    records = event["Records"]
    module = load_function("order_events")
    assert module.handler(event, None) == {"batchItemFailures": []}

    # The valid records committed; the poison changed nothing (record 4's valid RED-MUG line
    # reserved nothing).
    assert aws.stock("SKU-BLUE-CAP") == (99, 1)
    assert aws.stock("SKU-GREEN-PEN") == (98, 2)
    assert aws.stock("SKU-RED-MUG") == (100, 0)
    assert set(aws.order_records()) == {("ord-1201", "SHIPMENT"), ("ord-1205", "SHIPMENT")}

    poison_keys = {
        f"{SENDER_ID}/{records[1]['messageId']}": (records[1], "malformed_json"),
        "evt-order-0203": (records[2], "invalid_payload"),
        "evt-order-0204": (records[3], "invalid_payload"),
    }
    dead = aws.dead_letters()
    assert len(dead) == 3
    for message in dead:
        attributes = message["MessageAttributes"]
        key = attributes["inbox-message-key"]["StringValue"]
        original, code = poison_keys.pop(key)
        # The body, byte for byte.
        assert message["Body"].encode("utf-8") == original["body"].encode("utf-8")
        assert message["MD5OfBody"] == original["md5OfBody"]
        assert message["MD5OfBody"] == hashlib.md5(original["body"].encode()).hexdigest()
        # Every original attribute, unchanged, plus the four that say why.
        expected = received_attributes(original["messageAttributes"])
        assert {n: v for n, v in attributes.items() if n not in ADDED_ATTRIBUTES} == expected
        assert set(attributes) == set(expected) | ADDED_ATTRIBUTES
        assert attributes["inbox-error-code"] == {"DataType": "String", "StringValue": code}
        assert attributes["inbox-error"]["StringValue"]
    assert poison_keys == {}

    inbox = aws.inbox_records(ORDER_EVENTS)
    assert set(inbox) == {
        "evt-order-0201",
        "evt-order-0205",
        f"{SENDER_ID}/{records[1]['messageId']}",
        "evt-order-0203",
        "evt-order-0204",
    }
    for key in ("evt-order-0201", "evt-order-0205"):
        assert inbox[key]["status"] == "COMPLETED"
    for position, key, code in (
        (1, f"{SENDER_ID}/{records[1]['messageId']}", "malformed_json"),
        (2, "evt-order-0203", "invalid_payload"),
        (3, "evt-order-0204", "invalid_payload"),
    ):
        failed = inbox[key]
        assert failed["status"] == "FAILED"
        assert failed["error_code"] == code
        assert failed["last_error"]
        assert failed["delivery_id"] == records[position]["messageId"]
        assert bytes(failed["payload_snapshot"]) == records[position]["body"].encode("utf-8")
        shard = open_index_shard(record_pk(ORDER_EVENTS, key))
        assert failed["gsi_open_pk"] == open_index_pk(Status.FAILED, shard)
        # An incident artifact, kept for the failed-record retention (14 days), then removed.
        assert failed["expires_at"] > time.time() + 13 * 86_400

    # The valid records redelivered are duplicates: still nothing reported, nothing new in the DLQ.
    again = process(
        module.consumer, sqs_event(delivered_again(records[0]), delivered_again(records[4]))
    )
    assert [r.outcome for r in again] == [Outcome.DUPLICATE, Outcome.DUPLICATE]
    aws.assert_dlq_empty()


def test_missing_inbox_table_reports_every_record_and_dead_letters_nothing(
    aws: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws.seed_stock(STOCK)
    monkeypatch.setenv("INBOX_TABLE", f"inbox-missing-{uuid.uuid4().hex[:8]}")
    module = load_function("order_events")
    event = load_event(
        "sqs-order-poison.json"
    )  # valid and poison records alike: nothing can be recorded
    response = module.handler(event, None)
    assert failed_ids(response) == [record["messageId"] for record in event["Records"]]

    results = process(module.consumer, event)
    assert {(r.outcome, r.error_code) for r in results} == {(Outcome.FAILED, "inbox_unavailable")}
    aws.assert_dlq_empty()
    for sku, available in STOCK.items():
        assert aws.stock(sku) == (available, 0)
    assert aws.order_records() == {}
    assert aws.inbox_records(ORDER_EVENTS) == {}


def test_missing_domain_table_reports_every_new_record_and_dead_letters_nothing(
    aws: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws.seed_stock(STOCK)
    done = sqs_record(order("evt-1", "ord-1", {"SKU-RED-MUG": 1}))
    assert load_function("order_events").handler(sqs_event(done), None) == {"batchItemFailures": []}

    monkeypatch.setenv("DOMAIN_TABLE", f"domain-missing-{uuid.uuid4().hex[:8]}")
    module = load_function("order_events")
    fresh = [
        sqs_record(order("evt-2", "ord-2", {"SKU-RED-MUG": 1})),
        sqs_record(order("evt-3", "ord-3", {"SKU-BLUE-CAP": 2})),
        sqs_record(order("evt-4", "ord-4", {"SKU-GREEN-PEN": 3, "SKU-BLUE-CAP": 1})),
    ]
    batch = [fresh[0], delivered_again(done), fresh[1], fresh[2]]
    response = module.handler(sqs_event(*batch), None)
    # The already completed record is still acknowledged as a duplicate; the new ones fail.
    assert failed_ids(response) == [record["messageId"] for record in fresh]

    results = process(module.consumer, sqs_event(*batch))
    assert [(r.outcome, r.error_code) for r in results] == [
        (Outcome.FAILED, "dynamodb_unavailable"),
        (Outcome.DUPLICATE, None),
        (Outcome.FAILED, "dynamodb_unavailable"),
        (Outcome.FAILED, "dynamodb_unavailable"),
    ]
    aws.assert_dlq_empty()
    assert aws.stock("SKU-RED-MUG") == (99, 1)
    assert aws.stock("SKU-BLUE-CAP") == (100, 0)
    assert aws.stock("SKU-GREEN-PEN") == (100, 0)
    assert set(aws.order_records()) == {("ord-1", "SHIPMENT")}
    assert set(aws.inbox_records(ORDER_EVENTS)) == {"evt-1"}


def test_corrected_resend_after_poison_in_the_same_batch_commits_once(
    aws: AppState,
) -> None:
    """The producer sent an invalid OrderPlaced, then the corrected one (twice) under the same
    event_id, all in one batch. As in separate batches, the correction commits (the FAILED record
    of the dead-lettered copy does not block it) and its second copy is a duplicate; a later
    resend ships nothing more."""
    aws.seed_stock(STOCK)
    invalid = order("evt-1", "ord-1", {"SKU-RED-MUG": 0})
    corrected = order("evt-1", "ord-1", {"SKU-RED-MUG": 2})
    batch = [sqs_record(invalid), sqs_record(corrected), sqs_record(corrected)]
    module = load_function("order_events")
    results = process(module.consumer, sqs_event(*batch))

    assert [(r.outcome, r.error_code) for r in results] == [
        (Outcome.DEAD_LETTERED, "invalid_payload"),
        (Outcome.COMMITTED, None),
        (Outcome.DUPLICATE, None),
    ]
    assert [message["Body"] for message in aws.dead_letters()] == [batch[0]["body"]]

    resend = process(module.consumer, sqs_event(sqs_record(corrected)))
    assert [r.outcome for r in resend] == [Outcome.DUPLICATE]
    assert aws.stock("SKU-RED-MUG") == (98, 2)
    assert set(aws.order_records()) == {("ord-1", "SHIPMENT")}
    record = aws.inbox_records(ORDER_EVENTS)["evt-1"]
    assert record["status"] == "COMPLETED"
    assert "gsi_open_pk" not in record  # the FAILED record it replaced left the open index
    assert "error_code" not in record
    aws.assert_dlq_empty()


def test_unreachable_dead_letter_queue_reports_the_poison_and_commits_the_rest(
    aws: AppState, moto_server_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws.seed_stock(STOCK)
    missing = f"{moto_server_endpoint}/123456789012/order-events-dlq-missing-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", missing)
    event = load_event("sqs-order-poison.json")
    records = event["Records"]
    module = load_function("order_events")
    response = module.handler(event, None)

    # Poison that cannot be parked is not acknowledged: SQS keeps it (and redrives it by its
    # own maxReceiveCount); the valid records are committed regardless.
    assert failed_ids(response) == [records[n]["messageId"] for n in (1, 2, 3)]
    assert aws.stock("SKU-BLUE-CAP") == (99, 1)
    assert aws.stock("SKU-GREEN-PEN") == (98, 2)
    assert aws.stock("SKU-RED-MUG") == (100, 0)
    assert set(aws.inbox_records(ORDER_EVENTS)) == {"evt-order-0201", "evt-order-0205"}
    aws.assert_dlq_empty()  # the configured fixture queue got nothing either
