"""The local stack's template reader on the project's template.yaml (no services needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from devkit.paths import REPO_ROOT
from lambda_inbox_tools.local.kafka_poller import LOCAL_CLUSTER_ARN
from lambda_inbox_tools.local.run import feeds
from lambda_inbox_tools.local.scheduler import UnsupportedSchedule, rate_seconds, scaled_period
from lambda_inbox_tools.local.template import (
    KafkaEventSpec,
    ScheduleEventSpec,
    SqsEventSpec,
    StreamEventSpec,
    TemplateError,
    load_template,
    read_stack,
)

TEMPLATE = REPO_ROOT / "template.yaml"
SQS = "http://127.0.0.1:9999"


def test_short_form_tags_become_long_form() -> None:
    template = load_template(TEMPLATE)
    function = template["Resources"]["OrderEventsFunction"]["Properties"]
    assert function["Environment"]["Variables"]["DEAD_LETTER_QUEUE_URL"] == {
        "Ref": "OrderEventsDLQ"
    }
    assert function["Events"]["OrderEvents"]["Properties"]["Queue"] == {
        "Fn::GetAtt": ["OrderEventsQueue", "Arn"]
    }


def test_tables_keys_indexes_and_ttl_come_from_the_template() -> None:
    stack = read_stack(TEMPLATE, sqs_endpoint=SQS)
    inbox = stack.table("InboxTable")
    assert inbox.name == "lambda-inbox-InboxTable"
    assert inbox.key_schema == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert [i["IndexName"] for i in inbox.global_secondary_indexes] == ["open-records"]
    assert inbox.ttl_attribute == "expires_at"
    domain = stack.table("DomainTable")
    assert [k["AttributeName"] for k in domain.key_schema] == ["pk", "sk"]
    assert (domain.ttl_attribute, domain.stream_view_type) == ("expires_at", "NEW_IMAGE")


def test_queues_names_redrive_and_visibility() -> None:
    stack = read_stack(TEMPLATE, sqs_endpoint=SQS, stack_name="demo")
    orders = stack.queue("OrderEventsQueue")
    assert orders.name == "demo-order-events"
    assert orders.url == f"{SQS}/123456789012/demo-order-events"
    assert orders.visibility_timeout == 180
    assert orders.max_receive_count == 5
    assert orders.dead_letter_arn == stack.queue("OrderEventsDLQ").arn
    pairs = {(dlq.logical_id, source.logical_id) for dlq, source in stack.redrive_pairs()}
    assert pairs == {
        ("OrderEventsDLQ", "OrderEventsQueue"),
        ("PaymentEventsDLQ", "PaymentReplayQueue"),
        ("NotificationDLQ", "NotificationQueue"),
    }


def test_parameters_globals_and_refs_make_the_functions_environment() -> None:
    stack = read_stack(
        TEMPLATE, sqs_endpoint=SQS, parameters={"FunctionTimeout": "12", "LogLevel": "DEBUG"}
    )
    orders = stack.function("OrderEventsFunction")
    assert orders.timeout == 12
    assert orders.environment["POWERTOOLS_LOG_LEVEL"] == "DEBUG"
    assert orders.environment["INBOX_TABLE"] == "lambda-inbox-InboxTable"
    assert orders.environment["DEAD_LETTER_QUEUE_URL"] == stack.queue("OrderEventsDLQ").url
    assert orders.code_uri == TEMPLATE.parent / "functions" / "order_events"
    reaper = stack.function("InboxReaperFunction")
    assert reaper.timeout == 120  # the function's own Timeout beats Globals
    urls = json.loads(reaper.environment["INBOX_REAPER_DLQ_URLS"])
    assert urls["customer-notifications"] == stack.queue("NotificationDLQ").url
    [event] = orders.events
    assert event == SqsEventSpec("OrderEvents", stack.queue("OrderEventsQueue").arn, 10, 0.0, True)
    assert reaper.events == [ScheduleEventSpec("Sweep", "rate(5 minutes)", None)]


def test_kafka_mapping_and_its_queue_follow_the_msk_condition() -> None:
    without = read_stack(TEMPLATE, sqs_endpoint=SQS)
    assert without.topics == []
    assert "PaymentMskFailuresQueue" not in {q.logical_id for q in without.queues}
    stack = read_stack(TEMPLATE, sqs_endpoint=SQS, parameters={"MskClusterArn": LOCAL_CLUSTER_ARN})
    assert stack.topics == ["payments"]
    kafka = [
        e for e in stack.function("PaymentEventsFunction").events if isinstance(e, KafkaEventSpec)
    ]
    assert kafka[0].consumer_group == "lambda-inbox-payment-events"
    assert kafka[0].maximum_retry_attempts == 10
    assert kafka[0].on_failure_arn == stack.queue("PaymentMskFailuresQueue").arn


def test_unknown_parameter_is_refused() -> None:
    with pytest.raises(TemplateError, match="NoSuchParameter"):
        read_stack(TEMPLATE, parameters={"NoSuchParameter": "1"})


def test_rate_expressions() -> None:
    assert rate_seconds("rate(5 minutes)") == 300
    assert rate_seconds("rate(1 hour)") == 3600
    assert scaled_period("rate(5 minutes)", 1 / 30) == 10
    with pytest.raises(UnsupportedSchedule):
        rate_seconds("cron(0 * * * ? *)")
    with pytest.raises(UnsupportedSchedule):
        rate_seconds("rate(5 minute)")


OTHER_TEMPLATE = """
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage:
    Type: String
    Default: dev
Resources:
  Jobs:
    Type: AWS::SQS::Queue
  Alerts:
    Type: AWS::SNS::Topic
  Role:
    Type: AWS::IAM::Role
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: src/
      Handler: app.handler
      Environment:
        Variables:
          STAGE: !Ref Stage
      Events:
        FromJobs:
          Type: SQS
          Properties:
            Queue: !GetAtt Jobs.Arn
        FromApi:
          Type: Api
          Properties:
            Path: /jobs
            Method: post
"""


def test_another_template_gets_none_of_this_repositorys_parameters(tmp_path: Path) -> None:
    from lambda_inbox_tools.local.stack import read_local_stack

    path = tmp_path / "template.yaml"
    path.write_text(OTHER_TEMPLATE)
    stack = read_local_stack(path, sqs_endpoint=SQS, local_defaults={"NotifyWebhookUrl": "x"})
    assert stack.parameters == {"Stage": "dev"}
    assert stack.functions[0].environment == {"STAGE": "dev"}
    with pytest.raises(TemplateError, match="unknown template parameter"):
        read_local_stack(path, sqs_endpoint=SQS, parameters={"MskClusterArn": "arn"})


def test_what_is_not_emulated_is_listed_once_by_resource(tmp_path: Path) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(OTHER_TEMPLATE)
    stack = read_stack(path, sqs_endpoint=SQS)
    assert stack.skipped == ["Worker.FromApi (event Api): not emulated"]
    # A topic is created on the moto server now, for the subscriptions that feed queues.
    assert [topic.logical_id for topic in stack.routes.topics] == ["Alerts"]
    assert [type(event) for event in stack.functions[0].events] == [SqsEventSpec]


@pytest.mark.parametrize(
    ("text", "says"),
    [("Resources: [a: b\n", "not valid YAML (line 2"), ("just text\n", "no Resources")],
)
def test_a_template_it_cannot_read_is_a_template_error(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(text)
    with pytest.raises(TemplateError, match=re.escape(says)):
        load_template(path)


def test_a_stream_trigger_names_its_table_and_keeps_its_rules() -> None:
    path = REPO_ROOT / "tests/integration/local/stream_app/template.yaml"
    stack = read_stack(path, sqs_endpoint=SQS, stack_name="s")
    assert stack.table("SourceTable").stream_view_type == "NEW_IMAGE"
    (event,) = stack.function("CopyFunction").events
    assert isinstance(event, StreamEventSpec)
    assert (event.table_name, event.batch_size, event.maximum_retry_attempts) == (
        "s-SourceTable",
        4,
        2,
    )
    assert event.bisect_on_error and event.report_batch_item_failures
    assert event.on_failure_arn == stack.queue("GivenUpQueue").arn
    assert event.filters == (
        {"eventName": ["INSERT"], "dynamodb": {"Keys": {"pk": {"S": [{"prefix": "COPY#"}]}}}},
    )
    assert stack.skipped == []


def test_the_run_names_kafka_topics_sns_topics_and_eventbridge_rules(tmp_path: Path) -> None:
    """`lambda-inbox local`'s first lines say what feeds the queues, each kind by its name."""
    msk = {"MskClusterArn": LOCAL_CLUSTER_ARN}
    assert feeds(read_stack(TEMPLATE, sqs_endpoint=SQS, parameters=msk)) == (
        "Kafka topics payments, SNS topics lambda-inbox-shipment-notifications, EventBridge rules -"
    )
    routed = tmp_path / "template.yaml"
    routed.write_text(
        "Transform: AWS::Serverless-2016-10-31\nResources:\n"
        "  Orders:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: orders\n"
        "  Inbox:\n    Type: AWS::SQS::Queue\n"
        "  Feed:\n    Type: AWS::SNS::Subscription\n    Properties:\n"
        "      TopicArn: !Ref Orders\n      Protocol: sqs\n      Endpoint: !GetAtt Inbox.Arn\n"
        "  Placed:\n    Type: AWS::Events::Rule\n    Properties:\n      Name: placed\n"
        '      EventPattern: {"source": ["shop"]}\n'
        "      Targets:\n        - Id: inbox\n          Arn: !GetAtt Inbox.Arn\n"
    )
    assert feeds(read_stack(routed, sqs_endpoint=SQS)) == (
        "Kafka topics -, SNS topics orders, EventBridge rules placed"
    )
