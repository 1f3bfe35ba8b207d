"""Hand-written test events (no `eventSource`) are recognised by their shape; other sources are not."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from lambda_inbox.kafka import is_kafka_event
from lambda_inbox.sqs import is_sqs_event
from tests.unit.conftest import MotoAws


def test_a_minimal_sqs_event_without_event_source_is_processed(
    aws: MotoAws, order_events: Any
) -> None:
    body = json.dumps(
        {
            "event_id": "evt-min",
            "order_id": "ord-min",
            "customer_id": "c",
            "lines": [{"sku": "SKU-RED-MUG", "qty": 1}],
            "total_cents": 1,
        }
    )
    event = {"Records": [{"messageId": "m-1", "body": body}]}
    assert order_events.handler(event, None) == {"batchItemFailures": []}
    assert order_events.handler(event, None) == {"batchItemFailures": []}  # duplicate
    item = aws.dynamodb.get_item(
        TableName=aws.domain, Key={"pk": {"S": "SKU#SKU-RED-MUG"}, "sk": {"S": "STOCK"}}
    )["Item"]
    assert (item["available"]["N"], item["reserved"]["N"]) == ("99", "1")


@pytest.mark.parametrize(
    ("event", "sqs", "kafka"),
    [
        ({"Records": [{"messageId": "m", "body": "{}"}]}, True, False),
        ({"Records": [{"eventSource": "aws:sqs", "messageId": "m", "body": ""}]}, True, False),
        ({"Records": [{"eventSource": "aws:sns", "messageId": "m"}]}, False, False),
        ({"Records": [{"eventSource": "aws:kinesis", "kinesis": {}}]}, False, False),
        ({"Records": [{"body": "no message id"}]}, False, False),
        ({"records": {"payments-0": []}}, False, True),
        ({"eventSource": "SelfManagedKafka", "records": {}}, False, True),
        ({"eventSource": "aws:sqs", "records": {}}, False, False),
    ],
)
def test_event_shapes(event: dict[str, Any], sqs: bool, kafka: bool) -> None:
    assert (is_sqs_event(event), is_kafka_event(event)) == (sqs, kafka)


def test_a_minimal_kafka_event_without_event_source_is_processed(
    aws: MotoAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.handlers import load_function

    monkeypatch.setenv("INBOX_TABLE", aws.inbox)
    monkeypatch.setenv("DOMAIN_TABLE", aws.domain)
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", aws.dlq_url)
    payments = load_function("payment_events")
    value = json.dumps(
        {
            "event_id": "evt-k",
            "payment_id": "p-k",
            "order_id": "o",
            "customer_id": "c-k",
            "amount_cents": 5,
        }
    )
    event = {
        "records": {
            "payments-0": [
                {
                    "topic": "payments",
                    "partition": 0,
                    "offset": 3,
                    "value": base64.b64encode(value.encode()).decode(),
                }
            ]
        }
    }
    assert payments.handler(event, None) == {"batchItemFailures": []}
    item = aws.dynamodb.get_item(
        TableName=aws.domain, Key={"pk": {"S": "CUSTOMER#c-k"}, "sk": {"S": "BALANCE"}}
    )["Item"]
    assert item["balance_cents"]["N"] == "5"
