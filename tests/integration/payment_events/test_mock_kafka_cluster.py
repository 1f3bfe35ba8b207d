"""End to end through a real Kafka protocol: librdkafka's mock cluster (confluent-kafka).

Payments are produced to topic `payments` (with producer retries, i.e. duplicates at new offsets),
consumed back with a real Consumer, turned into the MSK event shape Lambda delivers and handed to
payment-events on DynamoDB Local.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import kafka_event, kafka_record
from devkit.handlers import load_function
from devkit.payloads import payment

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.integration

TOPIC = "payments"
POLL_DEADLINE = 30.0


@pytest.fixture
def mock_cluster() -> Iterator[tuple[Any, str]]:
    """A producer owning a 3-broker mock cluster, and the cluster's bootstrap address."""
    producer = confluent_kafka.Producer({"test.mock.num.brokers": 3})
    brokers = producer.list_topics(timeout=10).brokers
    bootstrap = ",".join(f"{broker.host}:{broker.port}" for broker in brokers.values())
    yield producer, bootstrap
    producer.flush(5)


def consume_all(bootstrap: str, expected: int) -> list[Any]:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"payments-test-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        metadata = consumer.list_topics(TOPIC, timeout=10)
        partitions = sorted(metadata.topics[TOPIC].partitions)
        consumer.assign(
            [
                confluent_kafka.TopicPartition(TOPIC, p, confluent_kafka.OFFSET_BEGINNING)
                for p in partitions
            ]
        )
        received: list[Any] = []
        deadline = time.monotonic() + POLL_DEADLINE
        while len(received) < expected and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=100, timeout=0.5):
                if message.error() is None:
                    received.append(message)
        return received
    finally:
        consumer.close()


def msk_event(messages: list[Any]) -> dict[str, Any]:
    """The MSK event Lambda would deliver for messages consumed from the cluster."""
    records = []
    for message in messages:
        timestamp_type, timestamp = message.timestamp()
        records.append(
            kafka_record(
                message.partition(),
                message.offset(),
                message.value(),
                key=message.key(),
                headers=message.headers() or [],
                topic=message.topic(),
                timestamp=timestamp,
                timestamp_type="CREATE_TIME" if timestamp_type == 1 else "LOG_APPEND_TIME",
            )
        )
    return kafka_event(records)


def test_payments_produced_to_a_mock_cluster_apply_exactly_once(
    aws: AppState, mock_cluster: tuple[Any, str]
) -> None:
    producer, bootstrap = mock_cluster
    payments = [payment(n, f"cust-{n % 4}", 100 + n) for n in range(24)]
    retried = [payments[n] for n in (1, 5, 9, 13, 17, 21, 23)]  # producer retries
    for body in payments + retried:
        producer.produce(
            TOPIC,
            key=body["customer_id"].encode(),  # one customer -> one partition, in order
            value=json.dumps(body).encode(),
            headers=[("content-type", b"application/json")],
        )
    assert producer.flush(10) == 0
    produced = len(payments) + len(retried)

    messages = consume_all(bootstrap, produced)
    assert len(messages) == produced
    assert len({message.partition() for message in messages}) > 1

    module = load_function("payment_events")
    # Lambda's batches: the records in two invocations, then the whole log replayed.
    half = len(messages) // 2
    for batch in (messages[:half], messages[half:], messages):
        assert module.handler(msk_event(batch), None) == {"batchItemFailures": []}

    for c in range(4):
        amounts = [100 + n for n in range(24) if n % 4 == c]
        assert aws.balance(f"cust-{c}") == (sum(amounts), len(amounts))
    assert len(aws.payment_items()) == 24
    sources = {item["source"]["S"] for item in aws.scan(aws.inbox)}
    assert all(source.startswith(f"{TOPIC}-") for source in sources)
