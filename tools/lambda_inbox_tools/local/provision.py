"""Create the template's tables, queues, Kinesis streams, Kafka topics, and the SNS topics and
EventBridge rules that feed its queues (`routes`), on the local services.

Queues are created dead-letter queues first (a RedrivePolicy needs its target). Visibility
timeouts are multiplied by the time scale (`--time-scale`), so that a failed message comes back
in seconds instead of minutes; every other attribute is the template's.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .routes import create_routes
from .template import QueueSpec, Stack, TableSpec

TABLE_WAIT_SECONDS = 30.0


def scaled_seconds(seconds: float, scale: float) -> int:
    """A duration of the template scaled for a local run, at least 1 s."""
    return max(1, round(seconds * scale))


def create_table(dynamodb: Any, table: TableSpec) -> None:
    request: dict[str, Any] = {
        "TableName": table.name,
        "AttributeDefinitions": table.attribute_definitions,
        "KeySchema": table.key_schema,
        "BillingMode": "PAY_PER_REQUEST",
    }
    if table.global_secondary_indexes:
        request["GlobalSecondaryIndexes"] = [
            {k: v for k, v in index.items() if k in ("IndexName", "KeySchema", "Projection")}
            for index in table.global_secondary_indexes
        ]
    if table.local_secondary_indexes:
        request["LocalSecondaryIndexes"] = table.local_secondary_indexes
    if table.stream_view_type:
        request["StreamSpecification"] = {
            "StreamEnabled": True,
            "StreamViewType": table.stream_view_type,
        }
    dynamodb.create_table(**request)
    deadline = time.monotonic() + TABLE_WAIT_SECONDS
    while dynamodb.describe_table(TableName=table.name)["Table"]["TableStatus"] != "ACTIVE":
        if time.monotonic() > deadline:
            raise TimeoutError(f"table {table.name} is not ACTIVE after {TABLE_WAIT_SECONDS} s")
        time.sleep(0.1)
    if table.ttl_attribute:
        dynamodb.update_time_to_live(
            TableName=table.name,
            TimeToLiveSpecification={"AttributeName": table.ttl_attribute, "Enabled": True},
        )


def queue_attributes(queue: QueueSpec, scale: float) -> dict[str, str]:
    attributes = dict(queue.attributes)
    attributes["VisibilityTimeout"] = str(scaled_seconds(queue.visibility_timeout, scale))
    if queue.dead_letter_arn:
        attributes["RedrivePolicy"] = json.dumps(
            {
                "deadLetterTargetArn": queue.dead_letter_arn,
                "maxReceiveCount": queue.max_receive_count,
            }
        )
    return attributes


def create_queues(sqs: Any, stack: Stack, scale: float) -> dict[str, str]:
    """Create every queue (targets first); returns logical ID -> queue URL."""
    urls: dict[str, str] = {}
    ordered = sorted(stack.queues, key=lambda q: q.dead_letter_arn is not None)
    for queue in ordered:
        created = sqs.create_queue(QueueName=queue.name, Attributes=queue_attributes(queue, scale))
        urls[queue.logical_id] = created["QueueUrl"]
        if created["QueueUrl"] != queue.url:
            raise RuntimeError(f"queue {queue.name}: URL {created['QueueUrl']} != {queue.url}")
    return urls


def create_topics(bootstrap: str, topics: list[str]) -> dict[str, int]:
    """Create the topics by asking for their metadata: the mock cluster creates a topic on first
    use with its default partition count (its CreateTopics does not answer). Returns topic ->
    partitions."""
    from confluent_kafka import Producer

    client = Producer({"bootstrap.servers": bootstrap})
    created: dict[str, int] = {}
    for topic in topics:
        metadata = client.list_topics(topic, timeout=10)
        created[topic] = len(metadata.topics[topic].partitions)
    client.flush(1)
    return created


def create_kinesis_streams(kinesis: Any, stack: Stack) -> None:
    """Every Kinesis stream, with its shard count, waited for until ACTIVE."""
    for stream in stack.kinesis_streams:
        kinesis.create_stream(StreamName=stream.name, ShardCount=stream.shard_count)
        kinesis.get_waiter("stream_exists").wait(
            StreamName=stream.name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 300}
        )


def provision(
    stack: Stack,
    *,
    dynamodb: Any,
    sqs: Any,
    kafka_bootstrap: str | None,
    scale: float,
    kinesis: Any = None,
    sns: Any = None,
    events: Any = None,
) -> dict[str, int]:
    """Tables, queues, Kinesis streams (on `kinesis`, the moto server), the SNS topics and
    EventBridge rules feeding the queues (on `sns` and `events`, the moto server) and the Kafka
    topics of `stack` on the local services; returns Kafka topic -> partitions."""
    for table in stack.tables:
        create_table(dynamodb, table)
    create_queues(sqs, stack, scale)
    if stack.kinesis_streams:
        create_kinesis_streams(kinesis, stack)
    if stack.routes:
        if sns is None or events is None:
            raise ValueError(
                "the template's SNS topics and EventBridge rules need sns= and events="
            )
        create_routes(sns, events, stack.routes)
    if kafka_bootstrap is None:
        return {}
    return create_topics(kafka_bootstrap, stack.topics)
