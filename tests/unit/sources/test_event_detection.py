"""Which events are SQS or Kafka batches: by their `eventSource`, and hand-written test events
(no `eventSource`) by their shape; other sources are neither."""

from __future__ import annotations

import base64
import json
from types import ModuleType
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import load_event, sqs_event, sqs_record
from lambda_inbox._sources import is_kafka_event
from lambda_inbox._sources.sqs import is_sqs_event


def test_a_minimal_sqs_event_without_event_source_is_processed(
    aws: AppState, order_events: ModuleType
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
    assert aws.stock("SKU-RED-MUG") == (99, 1)


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
        (sqs_event(sqs_record("{}")), True, False),
        (load_event("sqs-payment-replay.json"), True, False),
        ({"Records": []}, False, False),
        ({}, False, False),
        ({"Records": [{"eventSource": "aws:sns"}]}, False, False),
        ({"Records": [sqs_record("{}"), {"eventSource": "aws:s3"}]}, False, False),
        ({"Records": ["string"]}, False, False),
        ({"eventSource": "aws:kinesis", "records": {}}, False, False),
    ],
)
def test_event_shapes(event: dict[str, Any], sqs: bool, kafka: bool) -> None:
    assert (is_sqs_event(event), is_kafka_event(event)) == (sqs, kafka)


def test_a_minimal_kafka_event_without_event_source_is_processed(
    aws: AppState, payment_events: ModuleType
) -> None:
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
    assert payment_events.handler(event, None) == {"batchItemFailures": []}
    assert aws.balance("c-k") == (5, 1)
