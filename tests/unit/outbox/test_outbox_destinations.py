"""The outbox relay's destination kinds on moto: SNS topics (standard and FIFO, with SQS
subscriptions) and EventBridge buses (with a rule targeting a queue). What the relay asks of
each service is read at the botocore boundary (`before-call` hooks), so the batching limits
are counted on the calls themselves."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeDeserializer
from botocore.stub import Stubber
from moto import mock_aws

from devkit.aws_documents import aws_document, shape_problems
from devkit.events import outbox_image
from lambda_inbox import OutboxMessage, OutboxRelay, UnitOfWork, UnitOfWorkError
from lambda_inbox._outbox.destinations import destination_of, resolve
from lambda_inbox._outbox.eventbridge import EventBridgeSender, event_entry
from lambda_inbox_tools.testing import FakeLambdaContext

REGION = "us-east-1"
DESERIALIZER = TypeDeserializer()


def message_id_of(resources: list[str]) -> str:
    """The outbox message id an EventBridge event names among its `resources` (the wire
    contract of docs/concepts.md, "The outbox": `outbox-message-id:<id>`)."""
    (named,) = [r for r in resources if r.startswith("outbox-message-id:")]
    return named.removeprefix("outbox-message-id:")


def insert(sequence: int, new_image: dict[str, Any]) -> dict[str, Any]:
    change = {"SequenceNumber": str(sequence), "Keys": {}, "NewImage": new_image}
    return {"eventName": "INSERT", "eventSource": "aws:dynamodb", "dynamodb": change}


def received(sqs: Any, url: str, most: int = 10) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while len(found) < most:
        answer = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            AttributeNames=["All"],
        )
        if not answer.get("Messages"):
            break
        found += answer["Messages"]
    return found


def calls_of(client: Any, operation: str) -> list[dict[str, Any]]:
    """Every request of `operation` the client makes, as its parameters."""
    seen: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append(json.loads(json.dumps(params, default=str)))

    client.meta.events.register(f"before-parameter-build.{operation}", record)
    return seen


# ---------------------------------------------------------------------- destination kinds


@pytest.mark.parametrize(
    ("target", "kind"),
    [
        ("https://sqs.us-east-1.amazonaws.com/123456789012/q", "sqs"),
        ("arn:aws:sns:us-east-1:123456789012:topic", "sns"),
        ("arn:aws:sns:us-east-1:123456789012:topic.fifo", "sns"),
        ("arn:aws-cn:sns:cn-north-1:123456789012:topic", "sns"),
        ("arn:aws:events:us-east-1:123456789012:event-bus/orders", "eventbridge"),
        ("orders", "eventbridge"),
        ("default", "eventbridge"),
    ],
)
def test_a_target_names_its_kind(target: str, kind: str) -> None:
    assert destination_of(target).kind == kind


@pytest.mark.parametrize(
    "target",
    [
        "arn:aws:sqs:us-east-1:123456789012:q",  # a queue is sent to by its URL
        "arn:aws:events:us-east-1:123456789012:rule/r",
        "arn:aws:lambda:us-east-1:123456789012:function:f",
        "arn:broken",
        "",
        "a/b",
    ],
)
def test_a_target_of_no_kind_is_refused(target: str) -> None:
    with pytest.raises(ValueError, match="is n"):
        destination_of(target)


def test_an_item_names_a_mapped_name_or_a_target_but_never_a_guessed_bus() -> None:
    mapping = {"events": "orders", "topic": "arn:aws:sns:us-east-1:123456789012:t"}
    assert resolve("events", mapping).target == "orders"
    assert resolve("topic", mapping).kind == "sns"
    assert resolve("arn:aws:events:us-east-1:1:event-bus/b", {}).kind == "eventbridge"
    with pytest.raises(ValueError, match="not mapped"):
        resolve("orders", {})  # a bare item destination is a name to map, not a bus


def test_fifo_is_a_property_of_queues_and_topics() -> None:
    assert destination_of("arn:aws:sns:us-east-1:1:t.fifo").fifo
    assert not destination_of("arn:aws:sns:us-east-1:1:t").fifo
    assert not destination_of("bus.fifo").fifo


# ---------------------------------------------------------------------- what is written


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"event_source": "shop", "attributes": {"a": "b"}}, "no message attributes"),
        ({"detail_type": "Shipped", "body": "[1]"}, "must be a JSON object"),
        ({"event_source": "aws.shop"}, "may not begin with 'aws.'"),
        ({"event_source": " "}, "non-empty string"),
        ({"detail_type": "x" * 129}, "at most 128"),
        ({"attributes": {f"a{n}": "v" for n in range(10)}}, "at most 9"),
    ],
)
def test_an_item_its_destination_would_refuse_is_refused_when_written(
    fields: dict[str, Any], says: str
) -> None:
    request = {"destination": "events", "body": '{"n":1}', **fields}
    with pytest.raises(UnitOfWorkError, match=says):
        UnitOfWork().outbox("domain", **request)


def test_an_event_names_its_source_and_detail_type_or_takes_the_defaults() -> None:
    item = outbox_image("m-1", "events", event_source="shop.orders", detail_type="OrderShipped")
    assert item["outbox_event_source"] == {"S": "shop.orders"}
    assert item["outbox_detail_type"] == {"S": "OrderShipped"}
    assert "outbox_event_source" not in outbox_image("m-2", "events")


# ---------------------------------------------------------------------- SNS


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    with mock_aws():
        clients = {
            name: boto3.client(name, region_name=REGION) for name in ("sqs", "sns", "events")
        }
        yield clients


def subscribed_queue(aws: dict[str, Any], topic: str, name: str, raw: bool = True) -> str:
    sqs, sns = aws["sqs"], aws["sns"]
    fifo = {"FifoQueue": "true"} if name.endswith(".fifo") else {}
    url: str = sqs.create_queue(QueueName=name, Attributes=fifo)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=arn["Attributes"]["QueueArn"],
        Attributes={"RawMessageDelivery": "true" if raw else "false"},
    )
    return url


def test_a_topic_gets_each_message_with_its_id_as_a_message_attribute(
    aws: dict[str, Any],
) -> None:
    topic = aws["sns"].create_topic(Name="shipments")["TopicArn"]
    raw = subscribed_queue(aws, topic, "raw")
    wrapped = subscribed_queue(aws, topic, "wrapped", raw=False)
    relay = OutboxRelay(destinations={"shipments": topic}, sqs=aws["sqs"], sns=aws["sns"])
    event = {
        "Records": [insert(1, outbox_image("m-1", "shipments", '{"a":1}', attributes={"k": "v"}))]
    }

    assert relay.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}

    (message,) = received(aws["sqs"], raw)
    assert message["Body"] == '{"a":1}'
    assert message["MessageAttributes"]["outbox-message-id"]["StringValue"] == "m-1"
    assert message["MessageAttributes"]["k"]["StringValue"] == "v"
    (notification,) = received(aws["sqs"], wrapped)
    document = json.loads(notification["Body"])
    assert document["Message"] == '{"a":1}'
    assert document["MessageAttributes"]["outbox-message-id"] == {"Type": "String", "Value": "m-1"}


def test_a_fifo_topic_gets_the_id_as_deduplication_id_and_the_group_of_the_item(
    aws: dict[str, Any],
) -> None:
    topic = aws["sns"].create_topic(Name="shipments.fifo", Attributes={"FifoTopic": "true"})[
        "TopicArn"
    ]
    queue = subscribed_queue(aws, topic, "shipments.fifo")
    calls = calls_of(aws["sns"], "sns.PublishBatch")
    relay = OutboxRelay(destinations={"shipments": topic}, sqs=aws["sqs"], sns=aws["sns"])
    event = {
        "Records": [
            insert(1, outbox_image("m-1", "shipments", group_id="order-7")),
            insert(2, outbox_image("m-2", "shipments")),
        ]
    }

    assert relay.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}

    (call,) = calls
    assert [
        (e["MessageDeduplicationId"], e["MessageGroupId"])
        for e in call["PublishBatchRequestEntries"]
    ] == [("m-1", "order-7"), ("m-2", "m-2")]
    delivered = received(aws["sqs"], queue)
    assert sorted(m["Attributes"]["MessageGroupId"] for m in delivered) == ["m-2", "order-7"]
    assert sorted(m["Attributes"]["MessageDeduplicationId"] for m in delivered) == ["m-1", "m-2"]


def test_publish_batches_hold_ten_entries_and_256_kb_at_most(aws: dict[str, Any]) -> None:
    topic = aws["sns"].create_topic(Name="bulk")["TopicArn"]
    queue = subscribed_queue(aws, topic, "bulk")
    calls = calls_of(aws["sns"], "sns.PublishBatch")
    relay = OutboxRelay(destinations={"bulk": topic}, sqs=aws["sqs"], sns=aws["sns"])
    small = [insert(n, outbox_image(f"s-{n}", "bulk")) for n in range(23)]
    large_body = json.dumps({"pad": "x" * 100_000})
    large = [insert(100 + n, outbox_image(f"l-{n}", "bulk", large_body)) for n in range(5)]

    assert relay.handle({"Records": small + large}, FakeLambdaContext()) == {
        "batchItemFailures": []
    }

    sizes = []
    for call in calls:
        entries = call["PublishBatchRequestEntries"]
        assert 1 <= len(entries) <= 10
        size = sum(
            len(e["Message"].encode())
            + sum(
                len(name) + len("String") + len(value["StringValue"].encode())
                for name, value in e["MessageAttributes"].items()
            )
            for e in entries
        )
        assert size <= 256 * 1024
        sizes.append(len(entries))
    # 23 small ones, then the 100 KB ones at most two to a call
    assert sizes == [10, 10, 5, 2, 1]
    assert len(received(aws["sqs"], queue, most=28)) == 28


def test_a_message_too_large_for_a_topic_fails_its_record_alone(aws: dict[str, Any]) -> None:
    topic = aws["sns"].create_topic(Name="small")["TopicArn"]
    relay = OutboxRelay(destinations={"small": topic}, sqs=aws["sqs"], sns=aws["sns"])
    calls = calls_of(aws["sns"], "sns.PublishBatch")
    event = {
        "Records": [
            insert(1, outbox_image("big", "small", json.dumps({"pad": "x" * 300_000}))),
            insert(2, outbox_image("fine", "small")),
        ]
    }

    assert relay.handle(event, FakeLambdaContext()) == {
        "batchItemFailures": [{"itemIdentifier": "1"}]
    }
    assert [[e["Id"] for e in c["PublishBatchRequestEntries"]] for c in calls] == [["0"]]


# ---------------------------------------------------------------------- EventBridge


def bus_with_queue(aws: dict[str, Any], bus: str) -> tuple[str, str]:
    sqs, events = aws["sqs"], aws["events"]
    arn = events.create_event_bus(Name=bus)["EventBusArn"]
    url: str = sqs.create_queue(QueueName=f"{bus}-rule")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    events.put_rule(
        Name="all", EventBusName=bus, EventPattern=json.dumps({"source": [{"prefix": ""}]})
    )
    events.put_targets(
        Rule="all",
        EventBusName=bus,
        Targets=[{"Id": "q", "Arn": queue_arn["Attributes"]["QueueArn"]}],
    )
    return arn, url


@pytest.mark.parametrize("by", ["name", "arn"])
def test_a_bus_gets_the_body_as_detail_and_the_id_in_resources(
    aws: dict[str, Any], by: str
) -> None:
    arn, queue = bus_with_queue(aws, "orders")
    relay = OutboxRelay(
        destinations={"orders": "orders" if by == "name" else arn},
        sqs=aws["sqs"],
        events=aws["events"],
    )
    event = {
        "Records": [
            insert(
                1,
                outbox_image(
                    "m-1",
                    "orders",
                    '{"order_id":"o-1"}',
                    event_source="shop.orders",
                    detail_type="OrderShipped",
                ),
            ),
            insert(2, outbox_image("m-2", "orders")),
        ]
    }

    assert relay.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}

    delivered = {
        message_id_of(document["resources"]): document
        for document in (json.loads(m["Body"]) for m in received(aws["sqs"], queue))
    }
    assert set(delivered) == {"m-1", "m-2"}
    assert delivered["m-1"]["detail"] == {"order_id": "o-1"}
    assert (delivered["m-1"]["source"], delivered["m-1"]["detail-type"]) == (
        "shop.orders",
        "OrderShipped",
    )
    assert (delivered["m-2"]["source"], delivered["m-2"]["detail-type"]) == (
        "lambda-inbox.outbox",
        "OutboxMessage",
    )
    assert delivered["m-1"]["resources"] == ["outbox-message-id:m-1"]


def test_put_events_batches_count_bytes_as_eventbridge_does(aws: dict[str, Any]) -> None:
    bus_with_queue(aws, "bulk")
    calls = calls_of(aws["events"], "events.PutEvents")
    relay = OutboxRelay(destinations={"bulk": "bulk"}, sqs=aws["sqs"], events=aws["events"])
    body = json.dumps({"pad": "x" * 80_000})
    event = {"Records": [insert(n, outbox_image(f"m-{n}", "bulk", body)) for n in range(7)]}
    event["Records"] += [insert(10 + n, outbox_image(f"s-{n}", "bulk")) for n in range(12)]

    assert relay.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}

    for call in calls:
        size = sum(
            len(e["Source"].encode())
            + len(e["DetailType"].encode())
            + len(e["Detail"].encode())
            + sum(len(r.encode()) for r in e["Resources"])
            for e in call["Entries"]
        )
        assert size <= 256 * 1024 and len(call["Entries"]) <= 10
    assert [len(c["Entries"]) for c in calls] == [3, 3, 10, 3]


@pytest.mark.parametrize(
    ("body", "fields"),
    [("[1, 2]", {}), ('{"a":1}', {"attributes": {"k": "v"}})],
)
def test_what_a_bus_cannot_take_fails_its_record_without_a_call(
    aws: dict[str, Any], body: str, fields: dict[str, Any]
) -> None:
    bus_with_queue(aws, "orders")
    calls = calls_of(aws["events"], "events.PutEvents")
    relay = OutboxRelay(destinations={"orders": "orders"}, sqs=aws["sqs"], events=aws["events"])
    event = {"Records": [insert(1, outbox_image("m-1", "orders", body, **fields))]}

    assert relay.handle(event, FakeLambdaContext()) == {
        "batchItemFailures": [{"itemIdentifier": "1"}]
    }
    assert calls == []


# ---------------------------------------------------------------------- AWS's own samples


def test_an_event_entry_has_the_shape_of_aws_sample_request() -> None:
    sample = aws_document("eventbridge-put-events-request.json")
    item = outbox_image("m-1", "orders", '{"a":1}', event_source="shop", detail_type="Shipped")
    message = OutboxMessage.from_item({k: DESERIALIZER.deserialize(v) for k, v in item.items()})
    assert message is not None
    ours = {"Entries": [event_entry(message, "orders")]}
    assert shape_problems(sample, ours) == []
    assert all(not r.startswith("arn:") for e in sample["Entries"] for r in e["Resources"])


def test_aws_sample_answer_is_read_as_every_entry_sent() -> None:
    sample_request = aws_document("eventbridge-put-events-request.json")
    sample_answer = aws_document("eventbridge-put-events-response.json")
    client = boto3.client("events", region_name=REGION)
    sender = EventBridgeSender(destination_of("orders"), client)
    messages = [
        OutboxMessage(f"m-{n}", "orders", entry["Detail"], event_source=entry["Source"])
        for n, entry in enumerate(sample_request["Entries"])
    ]
    with Stubber(client) as stub:
        stub.add_response("put_events", sample_answer)
        assert sender.send([(str(n), m) for n, m in enumerate(messages)]) == []
    broken = copy.deepcopy(sample_answer)
    broken["FailedEntryCount"] = 1
    broken["Entries"][1] = {"ErrorCode": "ThrottlingException", "ErrorMessage": "slow"}
    with Stubber(client) as stub:
        stub.add_response("put_events", broken)
        (refusal,) = sender.send([(str(n), m) for n, m in enumerate(messages)])
    assert (refusal.entry_id, refusal.code, refusal.retryable) == ("1", "ThrottlingException", True)
