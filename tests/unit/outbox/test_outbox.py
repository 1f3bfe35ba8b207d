"""The consumer-side outbox: the item `UnitOfWork.outbox` adds to a message's transaction, and
`OutboxRelay` turning stream records of such items into SQS messages (moto)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError
from moto import mock_aws

from devkit.events import outbox_image
from lambda_inbox import OutboxMessage, OutboxRelay, UnitOfWork, UnitOfWorkError
from lambda_inbox_tools.testing import FakeLambdaContext

SERIALIZER = TypeSerializer()
DESERIALIZER = TypeDeserializer()


def test_an_outbox_request_is_one_conditional_put_with_a_fixed_id() -> None:
    uow = UnitOfWork()
    message_id = uow.outbox(
        "domain",
        destination="notifications",
        body={"event_id": "n-1", "order_id": "o-1"},
        message_id="n-1",
        attributes={"kind": "order_shipped"},
    )
    (action,) = uow.actions
    item = action.request["Item"]
    assert message_id == "n-1" and action.kind == "Put" and action.label == "outbox:n-1"
    assert item["pk"] == {"S": "OUTBOX#n-1"} and item["sk"] == {"S": "OUTBOX#n-1"}
    assert json.loads(item["outbox_body"]["S"]) == {"event_id": "n-1", "order_id": "o-1"}
    assert item["outbox_destination"] == {"S": "notifications"}
    assert item["outbox_attributes"] == {"M": {"kind": {"S": "order_shipped"}}}
    ttl = int(item["expires_at"]["N"]) - int(item["outbox_created_at"]["N"])
    assert ttl == 7 * 24 * 3600
    assert action.request["ConditionExpression"] == "attribute_not_exists(#outbox_key)"


def test_without_an_id_each_request_gets_a_new_one() -> None:
    uow = UnitOfWork()
    first = uow.outbox("domain", destination="q", body="a")
    second = uow.outbox("domain", destination="q", body="b")
    assert first != second and len(uow.actions) == 2


def _cyclic() -> dict[str, Any]:
    body: dict[str, Any] = {}
    body["self"] = body
    return body


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"destination": "", "body": "x"}, "destination is empty"),
        ({"destination": "q", "body": ""}, "body is empty"),
        ({"destination": "q", "body": {"bad": {1, 2}}}, "not JSON-serializable"),
        ({"destination": "q", "body": _cyclic()}, "not JSON-serializable"),
        ({"destination": "q", "body": "x", "attributes": {"n": ""}}, "non-empty string"),
    ],
)
def test_a_request_the_relay_could_not_send_is_refused_on_the_spot(
    options: dict[str, Any], says: str
) -> None:
    with pytest.raises(UnitOfWorkError, match=says):
        UnitOfWork().outbox("domain", **options)


def test_an_outbox_request_counts_against_the_transaction_limit() -> None:
    uow = UnitOfWork()
    for n in range(98):
        uow.put("domain", {"pk": f"p{n}", "sk": "s"})
    uow.outbox("domain", destination="q", body="x")
    with pytest.raises(UnitOfWorkError, match="at most 99"):
        uow.outbox("domain", destination="q", body="y")


# ---------------------------------------------------------------------------- the relay


@pytest.fixture
def queues() -> Iterator[dict[str, Any]]:
    with mock_aws():
        sqs: Any = boto3.client("sqs", region_name="us-east-1")
        urls = {
            name: sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
            for name, attributes in (
                ("notifications", {}),
                ("ordered.fifo", {"FifoQueue": "true"}),
            )
        }
        yield {"sqs": sqs, **urls}


def record(sequence: int, name: str, new_image: dict[str, Any] | None) -> dict[str, Any]:
    change: dict[str, Any] = {"SequenceNumber": str(sequence), "Keys": {}}
    if new_image is not None:
        change["NewImage"] = new_image
    return {"eventName": name, "eventSource": "aws:dynamodb", "dynamodb": change}


def received(sqs: Any, url: str) -> list[dict[str, Any]]:
    answer = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], AttributeNames=["All"]
    )
    messages: list[dict[str, Any]] = answer.get("Messages", [])
    return messages


def test_inserts_are_sent_once_each_and_the_rest_ignored(queues: dict[str, Any]) -> None:
    relay = OutboxRelay(destinations={"notifications": queues["notifications"]}, sqs=queues["sqs"])
    plain = {"pk": SERIALIZER.serialize("ORDER#1"), "sk": SERIALIZER.serialize("SHIPMENT")}
    event = {
        "Records": [
            record(1, "INSERT", outbox_image("m-1", "notifications", '{"a":1}')),
            record(2, "MODIFY", outbox_image("m-1", "notifications")),
            record(3, "REMOVE", None),
            record(4, "INSERT", plain),  # not an outbox item
            record(5, "INSERT", outbox_image("m-2", queues["ordered.fifo"])),  # a URL, FIFO
        ]
    }

    assert relay.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}

    (sent,) = received(queues["sqs"], queues["notifications"])
    assert sent["Body"] == '{"a":1}'
    assert sent["MessageAttributes"]["outbox-message-id"]["StringValue"] == "m-1"
    (ordered,) = received(queues["sqs"], queues["ordered.fifo"])
    assert ordered["Attributes"]["MessageGroupId"] == "m-2"
    assert ordered["Attributes"]["MessageDeduplicationId"] == "m-2"


def test_what_cannot_be_sent_is_reported_for_the_stream_to_retry(queues: dict[str, Any]) -> None:
    relay = OutboxRelay(destinations={"notifications": queues["notifications"]}, sqs=queues["sqs"])
    broken = outbox_image("m-3", "notifications")
    del broken["outbox_body"]
    event = {
        "Records": [
            record(1, "INSERT", outbox_image("m-1", "notifications")),
            record(2, "INSERT", outbox_image("m-2", "nowhere")),  # an unknown destination name
            record(3, "INSERT", broken),
            record(4, "INSERT", None),  # a stream without images
        ]
    }

    response = relay.handle(event, FakeLambdaContext())

    assert response == {"batchItemFailures": [{"itemIdentifier": s} for s in ("2", "3", "4")]}
    assert len(received(queues["sqs"], queues["notifications"])) == 1


def test_a_send_that_fails_reports_its_records(queues: dict[str, Any]) -> None:
    sqs = queues["sqs"]
    relay = OutboxRelay(destinations={"notifications": queues["notifications"]}, sqs=sqs)

    def refuse(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "AWS.SimpleQueueService.NonExistentQueue"}}, "Send")

    sqs.meta.events.register("before-call.sqs.SendMessageBatch", refuse)
    event = {
        "Records": [record(n, "INSERT", outbox_image(f"m-{n}", "notifications")) for n in (1, 2)]
    }

    assert relay.handle(event, FakeLambdaContext()) == {
        "batchItemFailures": [{"itemIdentifier": "1"}, {"itemIdentifier": "2"}]
    }


def test_no_time_left_sends_nothing_and_reports_everything(queues: dict[str, Any]) -> None:
    relay = OutboxRelay(destinations={"notifications": queues["notifications"]}, sqs=queues["sqs"])
    event = {"Records": [record(1, "INSERT", outbox_image("m-1", "notifications"))]}

    response = relay.handle(event, FakeLambdaContext(remaining_millis=0))

    assert response == {"batchItemFailures": [{"itemIdentifier": "1"}]}
    assert received(queues["sqs"], queues["notifications"]) == []


def test_an_item_that_is_no_outbox_item_reads_as_none() -> None:
    assert OutboxMessage.from_item({"pk": "ORDER#1", "sk": "SHIPMENT"}) is None


def test_an_outbox_item_over_400_kb_is_refused_on_the_spot() -> None:
    with pytest.raises(
        UnitOfWorkError, match=r"put on domain: item is \d+ bytes, DynamoDB allows 409600"
    ):
        UnitOfWork().outbox("domain", destination="q", body="x" * (400 * 1024))
