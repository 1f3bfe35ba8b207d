"""The operator's loop end to end: poison is dead-lettered, `lambda-inbox` shows why, the fix is
deployed, `lambda-inbox redrive` replays the message, and its effects happen exactly once even
when the replayed copy is delivered twice (DynamoDB Local for the tables, the moto server for
the queues)."""

from __future__ import annotations

import uuid

import pytest

from devkit.app_state import ORDER_EVENTS, AppState
from devkit.events import ORDER_QUEUE_ARN, delivered_again, sqs_event, sqs_record, sqs_record_from
from devkit.handlers import load_function
from devkit.payloads import order
from lambda_inbox_tools.services.queues import receive_all
from tests.cli_support import Cli

pytestmark = pytest.mark.integration

STOCK = {"SKU-RED-MUG": 10, "SKU-BLUE-CAP": 10}


def test_redriving_poison_after_the_fix_has_exactly_once_effects(
    aws: AppState, capsys: pytest.CaptureFixture[str]
) -> None:
    aws.seed_stock(STOCK)
    source_url = aws.sqs.create_queue(QueueName=f"order-events-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    table = aws.inbox
    cli = Cli(capsys)
    good = order("evt-order-0901", "ord-0901", {"SKU-RED-MUG": 1})
    poison = order("evt-order-0902", "ord-0902", {"SKU-BLUE-CAP": 2})
    poison["lines"][0]["gift_wrap"] = True  # a field the model does not know yet

    # 1. The poison is dead-lettered; the rest of the batch commits.
    module = load_function("order_events")
    batch = sqs_event(sqs_record(good), sqs_record(poison))
    assert module.handler(batch, None) == {"batchItemFailures": []}
    assert aws.stock("SKU-BLUE-CAP") == (10, 0)

    # 2. The operator finds it and sees why.
    listed = cli("failed", "--table", table, "--json")
    assert listed.code == 0, listed.err
    assert [r["message_key"] for r in listed.json()["records"]] == ["evt-order-0902"]
    shown = cli("show", ORDER_EVENTS, "evt-order-0902", "--table", table, "--json")
    assert shown.code == 0, shown.err
    record = shown.json()
    assert (record["status"], record["error_code"]) == ("FAILED", "invalid_payload")
    assert record["payload"]["value"]["lines"][0]["gift_wrap"] is True

    # 3. The fix: the model now ignores fields it does not know (a new deployment).
    fixed = load_function("order_events")
    fixed.OrderLine.model_config["extra"] = "ignore"
    fixed.OrderLine.model_rebuild(force=True)
    fixed.OrderPlaced.model_rebuild(force=True)

    # 4. Replay the dead letter to the source queue, and deliver what arrives there twice
    #    (a redrive run again after a kill between send and delete sends a second copy).
    run = cli("redrive", "--from", aws.dlq_url, "--to", source_url, "--json")
    assert run.code == 0, run.err
    assert run.json()["moved"] == 1
    (replayed,) = receive_all(aws.sqs, source_url, delete=True)
    assert replayed["MessageAttributes"]["inbox-message-key"]["StringValue"] == "evt-order-0902"
    first = sqs_record_from(replayed, arn=ORDER_QUEUE_ARN)
    assert fixed.handler(sqs_event(first), None) == {"batchItemFailures": []}
    assert fixed.handler(sqs_event(delivered_again(first)), None) == {"batchItemFailures": []}
    second_copy = {**delivered_again(first), "messageId": str(uuid.uuid4())}
    assert fixed.handler(sqs_event(second_copy), None) == {"batchItemFailures": []}

    # 5. Effects happened once; the record is COMPLETED; nothing is open or dead-lettered.
    assert aws.stock("SKU-BLUE-CAP") == (8, 2)
    assert aws.stock("SKU-RED-MUG") == (9, 1)
    assert set(aws.order_records()) == {("ord-0901", "SHIPMENT"), ("ord-0902", "SHIPMENT")}
    done = cli("show", ORDER_EVENTS, "evt-order-0902", "--table", table, "--json").json()
    assert done["status"] == "COMPLETED"
    assert cli("failed", "--table", table, "--json").json()["records"] == []
    aws.assert_dlq_empty()
