"""SNS subscriptions and EventBridge rules of a template on the moto server (local.routes): a
notification published to the topic reaches the subscribed queue in SNS's shape (or raw, with
`RawMessageDelivery`), a `FilterPolicy` holds back what it does not match, and an event put on a
bus reaches the queue its rule's `EventPattern` matches; what arrives is AWS's sample's shape and
an SNS-fed consumer commits it once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devkit.aws_documents import aws_document, shape_problems
from lambda_inbox_tools.services.offline import local_client
from lambda_inbox_tools.testing import sqs_event
from lambda_inbox_tools.testing.events import sqs_record_from

pytestmark = pytest.mark.integration

SHIPMENTS = Path(__file__).resolve().parents[3] / "examples" / "shipments" / "template.yaml"

ROUTES_TEMPLATE = """
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Orders:
    Type: AWS::SNS::Topic
  Wrapped:
    Type: AWS::SQS::Queue
  Raw:
    Type: AWS::SQS::Queue
  Routed:
    Type: AWS::SQS::Queue
  WrappedSubscription:
    Type: AWS::SNS::Subscription
    Properties:
      TopicArn: !Ref Orders
      Protocol: sqs
      Endpoint: !GetAtt Wrapped.Arn
  RawSubscription:
    Type: AWS::SNS::Subscription
    Properties:
      TopicArn: !Ref Orders
      Protocol: sqs
      Endpoint: !GetAtt Raw.Arn
      RawMessageDelivery: true
      FilterPolicy: {"kind": ["placed"]}
  MailSubscription:
    Type: AWS::SNS::Subscription
    Properties:
      TopicArn: !Ref Orders
      Protocol: email
      Endpoint: someone@example.com
  Bus:
    Type: AWS::Events::EventBus
    Properties:
      Name: !Sub "${AWS::StackName}-bus"
  OrdersRule:
    Type: AWS::Events::Rule
    Properties:
      EventBusName: !Ref Bus
      EventPattern: {"source": ["com.example.orders"], "detail-type": ["OrderPlaced"]}
      Targets:
        - Id: routed
          Arn: !GetAtt Routed.Arn
"""


def _sns(endpoint: str) -> Any:
    return local_client("sns", endpoint)


def test_a_topic_delivers_to_its_queues_as_sns_does_and_filters(
    local_app: Any, moto_server_endpoint: str, tmp_path: Path
) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(ROUTES_TEMPLATE)
    app = local_app(template)
    assert any("MailSubscription" in line for line in app.stack.skipped)
    (topic,) = app.stack.routes.topics
    sns = _sns(moto_server_endpoint)
    placed = {"kind": {"DataType": "String", "StringValue": "placed"}}
    sns.publish(
        TopicArn=topic.arn, Message='{"order_id": "o-1"}', Subject="s", MessageAttributes=placed
    )
    other = {"kind": {"DataType": "String", "StringValue": "cancelled"}}
    sns.publish(
        TopicArn=topic.arn, Message='{"order_id": "o-2"}', Subject="s", MessageAttributes=other
    )

    wrapped = [json.loads(m["Body"]) for m in app.messages("Wrapped", wait_seconds=1)]
    assert sorted(json.loads(n["Message"])["order_id"] for n in wrapped) == ["o-1", "o-2"]
    sample = aws_document("sns-notification-in-sqs.json")
    for notification in wrapped:
        assert shape_problems(sample, notification) == []
        assert notification["TopicArn"] == topic.arn
    raw = [m["Body"] for m in app.messages("Raw", wait_seconds=1)]
    assert raw == ['{"order_id": "o-1"}']  # the message itself; "cancelled" filtered out


def test_a_rule_routes_matching_events_on_its_bus_to_its_queue(
    local_app: Any, moto_server_endpoint: str, tmp_path: Path
) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(ROUTES_TEMPLATE)
    app = local_app(template)
    (rule,) = app.stack.routes.rules
    events = local_client("events", moto_server_endpoint)
    entries = [
        {"Source": "com.example.orders", "DetailType": "OrderPlaced", "Detail": '{"n": "1"}'},
        {"Source": "com.example.other", "DetailType": "OrderPlaced", "Detail": '{"n": "2"}'},
    ]
    events.put_events(Entries=[{**entry, "EventBusName": rule.bus} for entry in entries])
    (routed,) = [json.loads(m["Body"]) for m in app.messages("Routed", wait_seconds=1)]
    assert routed["detail"] == {"n": "1"}
    # The local stack's moto server delivers the event as AWS does, `account` included.
    assert shape_problems(aws_document("eventbridge-event.json"), routed) == []
    assert routed["account"] == "123456789012"


def test_moto_itself_leaves_the_events_account_out() -> None:
    """moto's own default template (what a target receives without `moto_events`' patch) has no
    `account`: the one difference from AWS's sample (docs/aws-fidelity.md). When moto sends it,
    this test fails and `lambda_inbox_tools.services.moto_events` can go."""
    from moto.events.utils import EventTemplateParser

    from lambda_inbox_tools.services.moto_events import moto_template, with_account

    sample = aws_document("eventbridge-event.json")
    # What moto's EventBridge hands the template: the event, its time still a Unix time.
    event: Any = {**sample, "time": 1513968228.0, "ingestion-time": 1513968228.0}
    delivered = EventTemplateParser.parse(moto_template(), {}, event)
    assert "account" not in delivered
    patched = EventTemplateParser.parse(with_account(moto_template()), {}, event)
    assert patched == {k: v for k, v in event.items() if k != "ingestion-time"}
    assert with_account(with_account(moto_template())) == with_account(moto_template())


def test_an_eventbridge_fed_consumer_reads_a_routed_event(
    local_app: Any, moto_server_endpoint: str, tmp_path: Path
) -> None:
    """What failed before the patch: a routed event refused as `envelope_mismatch`."""
    from lambda_inbox.wire import parse_sqs_event

    template = tmp_path / "template.yaml"
    template.write_text(ROUTES_TEMPLATE)
    app = local_app(template)
    (rule,) = app.stack.routes.rules
    events = local_client("events", moto_server_endpoint)
    entry = {"Source": "com.example.orders", "DetailType": "OrderPlaced", "Detail": '{"n": "1"}'}
    (put,) = events.put_events(Entries=[{**entry, "EventBusName": rule.bus}])["Entries"]
    (received,) = app.messages("Routed", wait_seconds=1)
    queue = app.stack.queue("Routed")
    (message,) = parse_sqs_event(
        sqs_event(sqs_record_from(received, arn=queue.arn)), envelope="eventbridge"
    )
    assert (message.delivery_id, message.json) == (put["EventId"], {"n": "1"})


def test_an_sns_fed_consumer_commits_a_published_notification_once(
    local_app: Any, moto_server_endpoint: str
) -> None:
    app = local_app(SHIPMENTS)
    (topic,) = app.stack.routes.topics
    sns = _sns(moto_server_endpoint)
    carrier = {"carrier": {"DataType": "String", "StringValue": "ups"}}
    message = '{"order_id": "o-9", "tracking_number": "1Z9"}'
    sns.publish(TopicArn=topic.arn, Message=message, MessageAttributes=carrier)
    sns.publish(TopicArn=topic.arn, Message='{"order_id": "o-10"}')  # no carrier: filtered
    queue = app.stack.queue("ShipmentsQueue")
    (received,) = app.messages("ShipmentsQueue", wait_seconds=1)
    record_shipment = app.function("RecordShipmentFunction")
    # Delivered, then delivered again by SNS under a new SQS message id: committed once.
    first = sqs_record_from(received, arn=queue.arn)
    again = sqs_record_from(received, arn=queue.arn, message_id="another-sqs-message-id")
    assert record_shipment(sqs_event(first)) == {"batchItemFailures": []}
    assert record_shipment(sqs_event(again)) == {"batchItemFailures": []}
    (shipment,) = app.items("ShipmentsTable")  # the item is the record (CreatesItem)
    assert (shipment["carrier"], shipment["inbox_consumer"]) == ("ups", "record-shipment")
    assert app.items("InboxTable") == []


def test_send_publishes_to_a_topic_and_puts_an_event_on_a_bus(
    local_app: Any, moto_server_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli_support import Cli

    template = tmp_path / "template.yaml"
    template.write_text(ROUTES_TEMPLATE)
    app = local_app(template)
    (topic,) = app.stack.routes.topics
    (rule,) = app.stack.routes.rules
    cli = Cli(
        capsys,
        AWS_ENDPOINT_URL_SNS=moto_server_endpoint,
        AWS_ENDPOINT_URL_EVENTBRIDGE=moto_server_endpoint,
    )
    published = cli(
        "send", "--sns-topic", topic.arn, "--body", '{"order_id": "o-3"}',
        "--attribute", "kind=placed", "--json",
    )  # fmt: skip
    assert published.code == 0, published.err
    message_id = json.loads(published.out)["message_id"]
    (notification,) = [json.loads(m["Body"]) for m in app.messages("Wrapped", wait_seconds=1)]
    assert notification["MessageId"] == message_id
    assert notification["MessageAttributes"]["kind"]["Value"] == "placed"
    assert [m["Body"] for m in app.messages("Raw", wait_seconds=1)] == ['{"order_id": "o-3"}']

    put = cli(
        "send", "--event-bus", rule.bus, "--source", "com.example.orders",
        "--detail-type", "OrderPlaced", "--body", '{"order_id": "o-4"}', "--json",
    )  # fmt: skip
    assert put.code == 0, put.err
    (event,) = [json.loads(m["Body"]) for m in app.messages("Routed", wait_seconds=1)]
    assert event["id"] == json.loads(put.out)["event_id"]
    assert event["detail"] == {"order_id": "o-4"}
    refused = cli("send", "--event-bus", rule.bus, "--body", "{}", "--attribute", "a=b")
    assert refused.code == 2 and "no attributes" in refused.err
    both = cli("send", "--sns-topic", topic.arn, "--event-bus", rule.bus, "--body", "{}")
    assert both.code == 2


def test_the_local_stack_runs_an_sns_fed_consumer_end_to_end(
    dynamodb_local_endpoint: str, moto_server_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`lambda-inbox local` on the shipments example: `lambda-inbox send --sns-topic` publishes,
    the subscription (with its filter) delivers to the queue, the queue's poller invokes the
    function, which registers each shipment once."""
    import time

    from lambda_inbox_tools.local.stack import running_stack
    from lambda_inbox_tools.services.items import scan_plain
    from tests.cli_support import Cli

    with running_stack(
        SHIPMENTS,
        dynamodb_endpoint=dynamodb_local_endpoint,
        sqs_endpoint=moto_server_endpoint,
        stack_name=f"ship-{time.monotonic_ns() % 10**8}",
        say=lambda _: None,
    ) as local:
        local.start()
        (topic,) = local.stack.routes.topics
        cli = Cli(capsys, AWS_ENDPOINT_URL_SNS=moto_server_endpoint)
        for order, carrier in (("o-1", "ups"), ("o-2", None), ("o-1", "ups")):
            extra = ["--attribute", f"carrier={carrier}"] if carrier else []
            body = json.dumps({"order_id": order, "tracking_number": f"T-{order}"})
            run = cli("send", "--sns-topic", topic.arn, "--body", body, *extra)
            assert run.code == 0, run.err
        table = local.stack.table("ShipmentsTable").name

        def shipped() -> dict[str, Any]:
            return {i["pk"]: i for i in scan_plain(local.dynamodb, table)}

        def handled() -> int:
            return sum(getattr(runner.stats, "deleted", 0) for runner in local.runners())

        deadline = time.monotonic() + 30
        while handled() < 2:
            assert time.monotonic() < deadline, f"not both notifications handled: {shipped()}"
            time.sleep(0.2)
        items = shipped()
        inbox = scan_plain(local.dynamodb, local.stack.table("InboxTable").name)
        errors = [e for runner in local.runners() for e in runner.stats.errors]
    assert errors == []
    # o-2 had no carrier: the FilterPolicy kept it from the queue.
    assert set(items) == {"ORDER#o-1"}
    assert items["ORDER#o-1"]["carrier"] == "ups"
    # Two publishes are two notifications (two MessageIds), a producer's retry: the second
    # finds the shipment its first made, the same content, and is a duplicate.
    assert items["ORDER#o-1"]["inbox_consumer"] == "record-shipment"
    assert inbox == []  # neither wrote an inbox record
