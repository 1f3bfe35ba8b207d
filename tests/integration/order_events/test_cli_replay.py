"""The operator's loop end to end: poison is dead-lettered, `lambda-inbox` shows why, the fix is
deployed, `lambda-inbox redrive` replays the message, and its effects happen exactly once even
when the replayed copy is delivered twice (DynamoDB Local for the tables, the moto server for
the queues)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import pytest

from tests.cli_support import Cli
from tests.integration.order_events.support import (
    CONSUMER,
    OrderEventsEnv,
    order,
    redeliver,
    sqs_event,
    sqs_record,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef

pytestmark = pytest.mark.integration

STOCK = {"SKU-RED-MUG": 10, "SKU-BLUE-CAP": 10}


def _lambda_record(message: MessageTypeDef) -> dict[str, Any]:
    """An SQS message as a Lambda SQS event record (string attributes, as the DLQ has them)."""
    attributes = {
        name: {"dataType": value["DataType"], "stringValue": value["StringValue"]}
        for name, value in message.get("MessageAttributes", {}).items()
    }
    return sqs_record(
        message["Body"], message_id=message["MessageId"], message_attributes=attributes
    )


def _receive_all(env: OrderEventsEnv, url: str) -> list[MessageTypeDef]:
    messages: list[MessageTypeDef] = []
    while batch := env.sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        VisibilityTimeout=60,
        WaitTimeSeconds=0,
    ).get("Messages", []):
        messages.extend(batch)
        env.sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(batch)
            ],
        )
    return messages


def test_redriving_poison_after_the_fix_has_exactly_once_effects(
    order_env: OrderEventsEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    order_env.seed_stock(STOCK)
    source_url = order_env.sqs.create_queue(QueueName=f"order-events-{uuid.uuid4().hex[:12]}")[
        "QueueUrl"
    ]
    table = order_env.tables.inbox
    cli = Cli(capsys)
    good = order("evt-order-0901", "ord-0901", {"SKU-RED-MUG": 1})
    poison = order("evt-order-0902", "ord-0902", {"SKU-BLUE-CAP": 2})
    poison["lines"][0]["gift_wrap"] = True  # a field the model does not know yet

    # 1. The poison is dead-lettered; the rest of the batch commits.
    module = order_env.load()
    batch = sqs_event([sqs_record(good), sqs_record(poison)])
    assert module.handler(batch, None) == {"batchItemFailures": []}
    assert order_env.stock("SKU-BLUE-CAP") == (10, 0)

    # 2. The operator finds it and sees why.
    listed = cli("failed", "--table", table, "--json")
    assert listed.code == 0, listed.err
    assert [r["message_key"] for r in listed.json()["records"]] == ["evt-order-0902"]
    shown = cli("show", CONSUMER, "evt-order-0902", "--table", table, "--json")
    assert shown.code == 0, shown.err
    record = shown.json()
    assert (record["status"], record["error_code"]) == ("FAILED", "invalid_payload")
    assert record["payload"]["value"]["lines"][0]["gift_wrap"] is True

    # 3. The fix: the model now ignores fields it does not know (a new deployment).
    fixed = order_env.load()
    fixed.OrderLine.model_config["extra"] = "ignore"
    fixed.OrderLine.model_rebuild(force=True)
    fixed.OrderPlaced.model_rebuild(force=True)

    # 4. Replay the dead letter to the source queue, and deliver what arrives there twice
    #    (a redrive run again after a kill between send and delete sends a second copy).
    run = cli("redrive", "--from", order_env.dlq_url, "--to", source_url, "--json")
    assert run.code == 0, run.err
    assert run.json()["moved"] == 1
    (replayed,) = _receive_all(order_env, source_url)
    assert replayed["MessageAttributes"]["inbox-message-key"]["StringValue"] == "evt-order-0902"
    first = _lambda_record(replayed)
    assert fixed.handler(sqs_event([first]), None) == {"batchItemFailures": []}
    assert fixed.handler(sqs_event([redeliver(first)]), None) == {"batchItemFailures": []}
    second_copy = {**redeliver(first), "messageId": str(uuid.uuid4())}
    assert fixed.handler(sqs_event([second_copy]), None) == {"batchItemFailures": []}

    # 5. Effects happened once; the record is COMPLETED; nothing is open or dead-lettered.
    assert order_env.stock("SKU-BLUE-CAP") == (8, 2)
    assert order_env.stock("SKU-RED-MUG") == (9, 1)
    assert set(order_env.order_records()) == {("ord-0901", "SHIPMENT"), ("ord-0902", "SHIPMENT")}
    done = cli("show", CONSUMER, "evt-order-0902", "--table", table, "--json").json()
    assert done["status"] == "COMPLETED"
    assert cli("failed", "--table", table, "--json").json()["records"] == []
    order_env.assert_dlq_empty()
