"""outbox -> SNS FIFO topic -> SQS FIFO queue -> inbox, with the relay killed mid-batch and
retried, raw message delivery on (the queue holds the messages, the id an SQS message attribute)
and off (it holds notifications, the id in their `MessageAttributes`, read with
`envelope="sns"`): DynamoDB Local holds the producing consumer's inbox, its table and
the table's stream; a moto server the topic, its subscription and the queue.

The producing consumer commits one outbox item per shipped order; the relay reads the stream's
records, publishes the first call of the batch and dies before answering; the stream's retry
sends the whole batch again. Every entry carries its outbox message id as its
`MessageDeduplicationId` (and its customer as `MessageGroupId`), so whatever copies reach the
queue, the receiving consumer, with no key configured, applies each shipment once: each copy,
and each again under a new SQS `messageId` (SNS's own redelivery)."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devkit.tables import LocalTables, create_domain_table, delete_table
from lambda_inbox import Clients, InboxConfig, InboxConsumer, OutboxRelay, UnitOfWork
from lambda_inbox_tools.lambda_records import lambda_stream_record
from lambda_inbox_tools.services.offline import REGION, local_client
from lambda_inbox_tools.services.queues import MOTO_SENDER_ID, create_queue, receive_all
from lambda_inbox_tools.testing import FakeLambdaContext
from lambda_inbox_tools.testing.events import sqs_event, sqs_record, sqs_record_from

pytestmark = pytest.mark.integration

ORDERS = 23
#: The message groups: a call holds one message per group, so calls of 7, 7, 7 and 2.
CUSTOMERS = 7


class Killed(BaseException):
    """The relay's process dying: nothing of the library catches it."""


@pytest.fixture
def outbox_table(local_tables: LocalTables) -> Iterator[str]:
    name = f"outbox-{uuid.uuid4().hex[:10]}"
    create_domain_table(local_tables.client, name, stream=True)
    yield name
    delete_table(local_tables.client, name)


def ship_orders(tables: LocalTables, outbox_table: str) -> None:
    """The producing consumer: one outbox item per order it ships, in its transaction."""

    def ship(order: dict[str, Any], uow: UnitOfWork) -> None:
        uow.put(outbox_table, {"pk": f"ORDER#{order['order_id']}", "sk": "SHIPPED"})
        uow.outbox(
            outbox_table,
            destination="shipments",
            body={"order_id": order["order_id"], "customer_id": order["customer_id"]},
            message_id=f"ship-{order['order_id']}",
            group_id=order["customer_id"],
        )

    producer = InboxConsumer(
        "orders",
        model=dict,
        decide=ship,
        key="order_id",
        config=InboxConfig("orders", tables.inbox),
        clients=Clients(dynamodb=local_client("dynamodb", tables.endpoint)),
    )
    orders = [
        sqs_record({"order_id": f"o-{n}", "customer_id": f"c-{n % CUSTOMERS}"})
        for n in range(ORDERS)
    ]
    for start in range(0, ORDERS, 10):
        batch = sqs_event(*orders[start : start + 10])
        assert producer.handle(batch, FakeLambdaContext()) == {"batchItemFailures": []}


def stream_event(tables: LocalTables, table: str) -> dict[str, Any]:
    """The Lambda event of the table's whole stream (one shard), as the mapping delivers it,
    filtered to outbox items as template.yaml's filter does."""
    streams: Any = boto3.client("dynamodbstreams", endpoint_url=tables.endpoint, region_name=REGION)
    arn = tables.client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
    outbox = [r for r in records if r["dynamodb"]["Keys"]["pk"]["S"].startswith("OUTBOX#")]
    return {"Records": [lambda_stream_record(r, arn) for r in outbox]}


def fifo_topic_with_queue(endpoint: str, raw: bool) -> tuple[Any, Any, str, str, str]:
    sns: Any = boto3.client("sns", endpoint_url=endpoint, region_name=REGION)
    sqs: Any = boto3.client("sqs", endpoint_url=endpoint, region_name=REGION)
    suffix = uuid.uuid4().hex[:8]
    topic = sns.create_topic(
        Name=f"shipments-{suffix}.fifo",
        Attributes={"FifoTopic": "true", "ContentBasedDeduplication": "false"},
    )["TopicArn"]
    queue = create_queue(sqs, f"shipment-notices-{suffix}.fifo")
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])
    queue_arn = queue_arn["Attributes"]["QueueArn"]
    sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": str(raw).lower()},
    )
    return sns, sqs, topic, queue, queue_arn


def outbox_message_id(message: Any, raw: bool) -> str:
    """The outbox message id a delivered SQS message carries: its own attribute (raw delivery)
    or its notification's."""
    if raw:
        return str(message["MessageAttributes"]["outbox-message-id"]["StringValue"])
    notification = json.loads(message["Body"])
    assert notification["Type"] == "Notification"
    return str(notification["MessageAttributes"]["outbox-message-id"]["Value"])


@pytest.mark.parametrize("raw", [True, False], ids=["raw", "notification"])
def test_a_relay_killed_mid_batch_and_retried_publishes_each_message_with_its_dedup_id(
    local_tables: LocalTables, outbox_table: str, moto_server_endpoint: str, raw: bool
) -> None:
    ship_orders(local_tables, outbox_table)
    event = stream_event(local_tables, outbox_table)
    assert len(event["Records"]) == ORDERS
    sns, sqs, topic, queue, queue_arn = fifo_topic_with_queue(moto_server_endpoint, raw)
    relay = OutboxRelay(destinations={"shipments": topic}, sqs=sqs, sns=sns)
    published: list[dict[str, Any]] = []
    calls = Counter[str]()

    def record(params: dict[str, Any], **_: Any) -> None:
        published.extend(params["PublishBatchRequestEntries"])

    def die_after_the_first_call(**_: Any) -> None:
        calls["PublishBatch"] += 1
        if calls["PublishBatch"] == 1:
            raise Killed  # published, never answered

    sns.meta.events.register("before-parameter-build.sns.PublishBatch", record)
    sns.meta.events.register("after-call.sns.PublishBatch", die_after_the_first_call)

    with pytest.raises(Killed):
        relay.handle(event, FakeLambdaContext())
    first_call = len(published)
    assert first_call == CUSTOMERS  # one call, one message of each group, went out
    # The stream mapping retries the whole batch.
    assert relay.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}

    written = {f"ship-o-{n}" for n in range(ORDERS)}
    ids = Counter(e["MessageAttributes"]["outbox-message-id"]["StringValue"] for e in published)
    assert set(ids) == written and sum(ids.values()) == ORDERS + first_call > ORDERS
    for entry in published:
        message_id = entry["MessageAttributes"]["outbox-message-id"]["StringValue"]
        assert entry["MessageDeduplicationId"] == message_id
        n = int(message_id.removeprefix("ship-o-"))
        assert entry["MessageGroupId"] == f"c-{n % CUSTOMERS}"

    # The receiving side: whatever copies the queue holds, each shipment applies once.
    delivered = receive_all(sqs, queue, delete=True)
    assert {outbox_message_id(m, raw) for m in delivered} == written
    notices: Counter[str] = Counter()

    def notify(shipment: dict[str, Any], uow: UnitOfWork) -> None:
        uow.update(
            local_tables.domain,
            {"pk": f"NOTICE#{shipment['order_id']}", "sk": "SENT"},
            "ADD times :one",
            values={":one": 1},
        )

    receiver = InboxConsumer(
        "notices",
        model=dict,
        decide=notify,
        config=InboxConfig("notices", local_tables.inbox),
        clients=Clients(dynamodb=local_client("dynamodb", local_tables.endpoint)),
        envelope=None if raw else "sns",
    )
    records = [sqs_record_from(m, arn=queue_arn) for m in delivered]
    records += [sqs_record_from(m, arn=queue_arn, message_id=str(uuid.uuid4())) for m in delivered]
    for start in range(0, len(records), 10):  # each copy, and each again under a new messageId
        response = receiver.handle(sqs_event(*records[start : start + 10]), FakeLambdaContext())
        assert response == {"batchItemFailures": []}
    for item in local_tables.client.scan(TableName=local_tables.domain)["Items"]:
        if item["pk"]["S"].startswith("NOTICE#"):
            notices[item["pk"]["S"]] = int(item["times"]["N"])
    assert notices == {f"NOTICE#o-{n}": 1 for n in range(ORDERS)}
    # Keyed on the outbox message id, with no key configured: a copy published after SNS's
    # deduplication window (a new notification, a new MessageId) is a duplicate too. The id is
    # in the name space of the principal that sent the SQS message: SNS's (moto's one SenderId).
    keys = {
        item["pk"]["S"]
        for item in local_tables.client.scan(TableName=local_tables.inbox)["Items"]
        if item["pk"]["S"].startswith("notices#")
    }
    assert keys == {f"notices#{MOTO_SENDER_ID}/{message_id}" for message_id in written}
