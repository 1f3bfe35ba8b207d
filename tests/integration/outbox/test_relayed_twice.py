"""A message the outbox relay sends twice (a relay retry: the same stream record again) arrives
as two SQS messages with two `messageId`s, whatever the destination: a queue; an SNS topic whose
subscription delivers notifications (raw delivery off: two notifications, two `MessageId`s); an
EventBridge bus whose rule targets the queue (two events, two `id`s). A lambda-inbox consumer
with no key configured (and the destination's envelope) commits it once, keyed on its
`outbox-message-id` (an SQS message attribute, the notification's `MessageAttributes`, the
event's `resources`); a configured key wins over it. DynamoDB Local holds the inbox and the
domain table, a moto server the queue, the topic and the bus."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import pytest

from devkit.tables import LocalTables
from lambda_inbox import Clients, InboxConfig, InboxConsumer, OutboxRelay, UnitOfWork
from lambda_inbox_tools.services.offline import local_client
from lambda_inbox_tools.services.queues import MOTO_SENDER_ID, create_queue, receive_all
from lambda_inbox_tools.testing import FakeLambdaContext
from lambda_inbox_tools.testing.events import sqs_event, sqs_record_from

pytestmark = pytest.mark.integration


def stream_batch() -> dict[str, Any]:
    uow = UnitOfWork()
    uow.outbox(
        "domain",
        destination="notifications",
        body={"event_id": "ntf-1", "order_id": "o-1"},
        message_id="ntf-1",
    )
    item = uow.actions[0].request["Item"]
    change = {"SequenceNumber": "100", "Keys": {}, "NewImage": item}
    return {"Records": [{"eventName": "INSERT", "eventSource": "aws:dynamodb", "dynamodb": change}]}


#: Destination kind -> the receiving consumer's envelope.
ENVELOPES: dict[str, Any] = {"queue": None, "topic": "sns", "bus": "eventbridge"}


def relayed_twice(kind: str, endpoint: str) -> tuple[list[dict[str, Any]], str]:
    """The SQS messages of one outbox message relayed twice to a destination of `kind`, and
    the queue's ARN."""
    sqs: Any = boto3.client("sqs", endpoint_url=endpoint)
    suffix = uuid.uuid4().hex[:8]
    queue = create_queue(sqs, f"notifications-{suffix}")
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])
    arn = str(arn["Attributes"]["QueueArn"])
    sns: Any = boto3.client("sns", endpoint_url=endpoint)
    events: Any = boto3.client("events", endpoint_url=endpoint)
    destination = queue
    if kind == "topic":
        destination = sns.create_topic(Name=f"notifications-{suffix}")["TopicArn"]
        sns.subscribe(TopicArn=destination, Protocol="sqs", Endpoint=arn)  # raw delivery off
    elif kind == "bus":
        destination = f"notifications-{suffix}"
        events.create_event_bus(Name=destination)
        pattern = json.dumps({"source": [{"prefix": ""}]})
        events.put_rule(Name="all", EventBusName=destination, EventPattern=pattern)
        events.put_targets(Rule="all", EventBusName=destination, Targets=[{"Id": "q", "Arn": arn}])
    relay = OutboxRelay(
        destinations={"notifications": destination}, sqs=sqs, sns=sns, events=events
    )
    for _ in range(2):  # the stream retries a batch the relay had sent
        assert relay.handle(stream_batch(), FakeLambdaContext()) == {"batchItemFailures": []}
    messages: list[Any] = receive_all(sqs, queue, delete=True)
    assert len(messages) == 2 and len({m["MessageId"] for m in messages}) == 2
    return messages, arn


def consumer(tables: LocalTables, name: str, **options: Any) -> InboxConsumer[Any]:
    def notify(body: dict[str, Any], uow: UnitOfWork) -> None:
        uow.update(
            tables.domain,
            {"pk": f"ORDER#{body['order_id']}", "sk": "NOTIFIED"},
            "ADD times :one",
            values={":one": 1},
        )

    return InboxConsumer(
        name,
        model=dict,
        decide=notify,
        config=InboxConfig(name, tables.inbox),
        clients=Clients(dynamodb=local_client("dynamodb", tables.endpoint)),
        **options,
    )


@pytest.mark.parametrize("kind", ENVELOPES)
def test_a_message_relayed_twice_commits_once_with_no_key_configured(
    local_tables: LocalTables, moto_server_endpoint: str, kind: str
) -> None:
    messages, arn = relayed_twice(kind, moto_server_endpoint)
    if kind != "queue":  # two notifications, two events: two delivery ids
        bodies = [json.loads(m["Body"]) for m in messages]
        assert len({b.get("MessageId") or b.get("id") for b in bodies}) == 2
    inbox = consumer(local_tables, "notifications", envelope=ENVELOPES[kind])

    for message in messages:  # one delivery per invocation, as two separate receives would be
        response = inbox.handle(sqs_event(sqs_record_from(message, arn=arn)), FakeLambdaContext())
        assert response == {"batchItemFailures": []}

    assert notified(local_tables) == 1  # keyed on a delivery id, it would be 2
    # In the name space of the principal that sent the SQS message (on moto, its one SenderId).
    key = f"notifications#{MOTO_SENDER_ID}/ntf-1"
    record = local_tables.client.get_item(TableName=local_tables.inbox, Key={"pk": {"S": key}})
    assert "Item" in record, "the inbox record is keyed on the outbox message id"


def notified(tables: LocalTables) -> int:
    """How many times the notification's effect was committed."""
    item = tables.client.get_item(
        TableName=tables.domain, Key={"pk": {"S": "ORDER#o-1"}, "sk": {"S": "NOTIFIED"}}
    )["Item"]
    return int(item["times"]["N"])


@pytest.mark.parametrize("kind", ENVELOPES)
def test_a_configured_key_wins_over_the_outbox_message_id(
    local_tables: LocalTables, moto_server_endpoint: str, kind: str
) -> None:
    messages, arn = relayed_twice(kind, moto_server_endpoint)
    inbox = consumer(local_tables, "keyed", key="order_id", envelope=ENVELOPES[kind])

    for message in messages:
        response = inbox.handle(sqs_event(sqs_record_from(message, arn=arn)), FakeLambdaContext())
        assert response == {"batchItemFailures": []}

    assert notified(local_tables) == 1
    keys = [
        item["pk"]["S"]
        for item in local_tables.client.scan(TableName=local_tables.inbox)["Items"]
        if item["pk"]["S"].startswith("keyed#")
    ]
    assert keys == ["keyed#o-1"]
