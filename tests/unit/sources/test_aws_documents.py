"""AWS's own documents (tests/fixtures/aws/), in both directions: every reader of the project
accepts AWS's samples as they are, and every document the local stack and the testing kit build
has the samples' keys and value types. The shape comparison itself is proved first, by the broken
documents it must catch.

The local stack's on-failure records are compared with their samples where the pollers write
them (tests/integration/local/test_emulation.py, test_streams.py).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devkit.app_state import AppState
from devkit.aws_documents import AWS_FIXTURES, aws_document, shape_problems
from devkit.handlers import load_function
from lambda_inbox import MessageResult, OutboxRelay, Outcome
from lambda_inbox._sources import DynamoDBStreamsSource, KinesisSource, is_kafka_event
from lambda_inbox._sources.kafka import kafka_response, parse_kafka_event
from lambda_inbox._sources.kinesis import parse_kinesis_event
from lambda_inbox._sources.senders import principal
from lambda_inbox._sources.sqs import is_sqs_event, parse_sqs_event, sqs_response
from lambda_inbox._sources.streams import parse_dynamodb_stream_event, stream_response
from lambda_inbox_tools.lambda_records import lambda_stream_record
from lambda_inbox_tools.local.event_specs import ScheduleEventSpec
from lambda_inbox_tools.local.invoker import Invocation
from lambda_inbox_tools.local.kafka_poller import KafkaRecord
from lambda_inbox_tools.local.kafka_poller import kafka_event as local_kafka_event
from lambda_inbox_tools.local.scheduler import Scheduler
from lambda_inbox_tools.local.sqs_poller import lambda_sqs_record
from lambda_inbox_tools.local.template import FunctionSpec, KafkaEventSpec
from lambda_inbox_tools.services.offline import REGION
from lambda_inbox_tools.services.queues import MOTO_SENDER_ID
from lambda_inbox_tools.testing.events import (
    kafka_event,
    kafka_record,
    sqs_event,
    sqs_record,
)

FUNCTION = FunctionSpec("Fn", "fn", Path("."), "app.handler", 3, 128, {})


def test_every_fixture_is_listed_in_the_readme_with_its_source_page() -> None:
    readme = (AWS_FIXTURES / "README.md").read_text()
    files = sorted(path.name for path in AWS_FIXTURES.glob("*.json"))
    assert len(files) == 23
    for name in files:
        row = next((line for line in readme.splitlines() if line.startswith(f"| `{name}`")), "")
        assert "https://docs.aws.amazon.com/" in row, name


# ---------------------------------------------------------------------------- the comparison


def test_the_shape_of_a_sample_is_its_own() -> None:
    for path in AWS_FIXTURES.glob("*.json"):
        sample = aws_document(path.name)
        assert shape_problems(sample, sample) == [], path.name


@pytest.mark.parametrize(
    ("break_it", "problem"),
    [
        (lambda e: e["Records"][0].pop("receiptHandle"), "$.Records[0].receiptHandle: missing"),
        (
            lambda e: e["Records"][1]["attributes"].update(ApproximateReceiveCount=1),
            "$.Records[1].attributes.ApproximateReceiveCount: number where AWS's sample has string",
        ),
        (lambda e: e.update(Records={}), "$.Records: object where AWS's sample has array"),
        (
            lambda e: e["Records"][0].update(messageAttributes=None),
            "$.Records[0].messageAttributes: null",
        ),
    ],
    ids=["missing-key", "number-for-string", "object-for-array", "null-for-object"],
)
def test_a_broken_sqs_event_is_caught(break_it: Callable[[Any], Any], problem: str) -> None:
    sample = aws_document("sqs-event-standard.json")
    broken = copy.deepcopy(sample)
    break_it(broken)
    assert any(p.startswith(problem) for p in shape_problems(sample, broken)), problem


def test_a_broken_record_under_a_key_of_the_senders_choosing_is_caught() -> None:
    sample = aws_document("msk-event.json")
    broken = copy.deepcopy(sample)
    broken["records"]["other-topic-3"] = [{**sample["records"]["mytopic-0"][0], "offset": "15"}]
    broken["records"]["other-topic-3"][0]["headers"] = [{"h": "not bytes"}]
    assert shape_problems(sample, broken) == [
        "$.records['other-topic-3'][0].offset: string where AWS's sample has number",
        "$.records['other-topic-3'][0].headers[0]['h']: string where AWS's sample has array",
    ]


def test_an_on_failure_record_with_offsets_as_numbers_or_a_partition_missing_is_caught() -> None:
    sample = aws_document("kafka-on-failure-sqs-retries-exhausted.json")
    broken = copy.deepcopy(sample)
    broken["KafkaBatchInfo"]["recordsInfo"]["Topic-0"]["firstRecordOffset"] = 5
    del broken["KafkaBatchInfo"]["bootstrapServers"]
    assert shape_problems(sample, broken) == [
        "$.KafkaBatchInfo.bootstrapServers: missing",
        "$.KafkaBatchInfo.recordsInfo['Topic-0'].firstRecordOffset: number where AWS's sample has string",
    ]
    invented = {"KafkaBatchInfo": {"topic": "t", "partition": 0, "firstOffset": 0, "lastOffset": 1}}
    assert "$.KafkaBatchInfo.recordsInfo: missing" in shape_problems(sample, invented)


def test_extra_keys_are_allowed_and_item_images_only_need_objects() -> None:
    sample = aws_document("dynamodb-streams-event.json")
    document = copy.deepcopy(sample)
    document["Records"][0]["dynamodb"]["ApproximateCreationDateTime"] = 1428537600
    document["Records"][0]["dynamodb"]["NewImage"]["Tags"] = {"SS": ["a", "b"]}
    assert shape_problems(sample, document) == []
    document["Records"][0]["dynamodb"]["NewImage"]["Tags"] = ["a"]
    assert shape_problems(sample, document) == [
        "$.Records[0].dynamodb.NewImage['Tags']: array where AWS's sample has object"
    ]


# ---------------------------------------------------------------------------- readers


def test_the_sqs_adapter_reads_both_sqs_samples() -> None:
    standard = aws_document("sqs-event-standard.json")
    assert is_sqs_event(standard)
    assert [m.delivery_id for m in parse_sqs_event(standard)] == [
        "059f36b4-87a3-44ab-83d2-661975830a7d",
        "2e1424d4-f796-459a-8184-9c92662be6da",
    ]
    (fifo,) = parse_sqs_event(aws_document("sqs-event-fifo.json"))
    assert (fifo.message_group_id, fifo.deduplication_id) == ("1", "1")
    assert fifo.ordering_scope == "arn:aws:sqs:us-east-2:123456789012:fifo.fifo"


@pytest.mark.parametrize("name", ["msk-event.json", "self-managed-kafka-event.json"])
def test_the_kafka_adapter_reads_both_kafka_samples(name: str) -> None:
    event = aws_document(name)
    assert is_kafka_event(event)
    (message,) = parse_kafka_event(event)
    assert message.item_identifier == {"topic-partition": "mytopic-0", "offset": 15}
    assert message.body == b"Hello, this is a test."
    assert message.attributes["headerKey"] == "headerValue"


def test_the_stream_adapters_read_the_kinesis_and_dynamodb_streams_samples() -> None:
    kinesis = aws_document("kinesis-event.json")
    assert KinesisSource().matches(kinesis) and not DynamoDBStreamsSource().matches(kinesis)
    first, second = parse_kinesis_event(kinesis)
    assert first.body == b"Hello, this is a test."
    assert second.body == b"This is only a test."
    assert first.item_identifier == "49590338271490256608559692538361571095921575989136588898"
    assert first.delivery_id == f"shardId-000000000006:{first.item_identifier}"
    assert first.ordering_scope == second.ordering_scope
    assert first.dead_letter_attributes["kinesis-shard-id"]["StringValue"] == (
        "shardId-000000000006"
    )
    assert first.dead_letter_attributes["kinesis-partition-key"]["StringValue"] == "1"
    streams = aws_document("dynamodb-streams-event.json")
    assert DynamoDBStreamsSource().matches(streams) and not KinesisSource().matches(streams)
    insert, modify = parse_dynamodb_stream_event(streams)
    assert (insert.item_identifier, insert.delivery_id) == ("111", "1")
    assert insert.json == {
        "eventName": "INSERT",
        "Keys": {"Id": 101},
        "NewImage": {"Message": "New item!", "Id": 101},
        "OldImage": None,
        "userIdentity": None,
    }
    assert modify.json["OldImage"] == {"Message": "New item!", "Id": 101}
    assert modify.json["NewImage"]["Message"] == "This item has changed"
    assert json.loads(insert.body) == streams["Records"][0]  # the record, as delivered


@pytest.mark.parametrize(
    ("name", "records"),
    [
        ("sqs-event-standard.json", 2),
        ("sqs-event-fifo.json", 1),
        ("msk-event.json", 1),
        ("kinesis-event.json", 2),
    ],
)
def test_a_consumer_takes_aws_samples_as_they_are(aws: AppState, name: str, records: int) -> None:
    """The samples carry text, not a JSON payload: a JSON consumer dead-letters them with their
    original bytes and acknowledges the batch; nothing is lost, nothing fails."""
    consumer = aws.consumer(
        "samples",
        model=dict,
        decide=lambda payload, uow: None,
        config={"dead_letter_queue_url": aws.fifo_dlq_url if "fifo" in name else aws.dlq_url},
    )
    response = consumer.handle(aws_document(name), None)
    assert response == {"batchItemFailures": []}
    dead = aws.dead_letters(fifo="fifo" in name)
    assert len(dead) == records
    assert {d["Body"] for d in dead} <= {
        "Test message.",
        "Hello, this is a test.",
        "This is only a test.",
    }


def test_a_consumer_projects_the_dynamodb_streams_sample(aws: AppState) -> None:
    """The sample's records are documents: a projection consumer commits both, in order."""
    seen: list[tuple[str, str]] = []

    def project(change: dict[str, Any], uow: Any) -> None:
        seen.append((change["eventName"], change["NewImage"]["Message"]))
        uow.update(
            aws.domain,
            {"pk": f"ITEM#{change['Keys']['Id']}", "sk": "PROJECTION"},
            "SET message = :message",
            values={":message": change["NewImage"]["Message"]},
        )

    consumer = aws.consumer("projection", model=dict, decide=project)
    response = consumer.handle(aws_document("dynamodb-streams-event.json"), None)
    assert response == {"batchItemFailures": []}
    assert seen == [("INSERT", "New item!"), ("MODIFY", "This item has changed")]
    item = aws.item("ITEM#101", "PROJECTION")
    assert item is not None and item["message"] == {"S": "This item has changed"}


def test_the_outbox_relay_reads_the_dynamodb_streams_sample(aws: AppState) -> None:
    relay = OutboxRelay(sqs=aws.sqs)  # the sample's items are no outbox items: none is sent
    response = relay.handle(aws_document("dynamodb-streams-event.json"), None)
    assert response == {"batchItemFailures": []}
    assert shape_problems(aws_document("streams-batch-response.json"), response) == []


@pytest.mark.parametrize(
    "name", ["scheduler-event-without-payload.json", "eventbridge-scheduled-event.json"]
)
def test_the_reaper_takes_both_schedule_events(aws: AppState, name: str) -> None:
    reaper = load_function("inbox_reaper")
    summary = reaper.handler(aws_document(name), None)
    assert {k: summary[k] for k in ("reaped", "dead_lettered", "open")} == {
        "reaped": 0,
        "dead_lettered": 0,
        "open": 0,
    }


# ---------------------------------------------------------------------------- responses


def test_the_librarys_partial_batch_responses_have_the_documented_shapes() -> None:
    (sqs_message,) = parse_sqs_event(sqs_event(sqs_record("{}")))
    sqs_answer = sqs_response([MessageResult(sqs_message, Outcome.FAILED)])
    assert shape_problems(aws_document("sqs-batch-response.json"), sqs_answer) == []
    (kafka_message,) = parse_kafka_event(kafka_event([kafka_record(0, 7, {"a": 1}, topic="a-b")]))
    kafka_answer = kafka_response([MessageResult(kafka_message, Outcome.FAILED)])
    assert shape_problems(aws_document("kafka-batch-response.json"), kafka_answer) == []
    assert kafka_answer["batchItemFailures"][0]["itemIdentifier"] == {
        "topic-partition": "a-b-0",
        "offset": 7,
    }
    for records in (
        parse_kinesis_event(aws_document("kinesis-event.json")),
        parse_dynamodb_stream_event(aws_document("dynamodb-streams-event.json")),
    ):
        answer = stream_response([MessageResult(m, Outcome.FAILED) for m in records])
        assert shape_problems(aws_document("streams-batch-response.json"), answer) == []
        # The first record to redeliver, by its sequence number: Lambda retries from there.
        assert answer == {"batchItemFailures": [{"itemIdentifier": records[0].item_identifier}]}


def test_the_relays_failures_have_the_documented_shape(aws: AppState) -> None:
    record = copy.deepcopy(aws_document("dynamodb-streams-event.json")["Records"][0])
    record["dynamodb"]["NewImage"] = {"outbox_message_id": {"S": "m-1"}}  # no body: fails
    response = OutboxRelay(sqs=aws.sqs).handle({"Records": [record]}, None)
    assert response == {"batchItemFailures": [{"itemIdentifier": "111"}]}
    assert shape_problems(aws_document("streams-batch-response.json"), response) == []


# ---------------------------------------------------------------------------- builders


def test_the_kits_sqs_records_have_the_samples_shapes() -> None:
    standard = aws_document("sqs-event-standard.json")
    assert shape_problems(standard, sqs_event(sqs_record("{}"), sqs_record("{}"))) == []
    fifo = sqs_event(sqs_record("{}", group="g-1", dedup="d-1"))
    assert shape_problems(aws_document("sqs-event-fifo.json"), fifo) == []
    assert fifo["Records"][0]["eventSourceARN"].endswith(".fifo")


def test_the_kit_refuses_a_group_on_a_standard_queue_and_a_fifo_queue_without_one() -> None:
    with pytest.raises(ValueError, match="a standard queue"):
        sqs_record("{}", group="g", arn="arn:aws:sqs:us-east-1:1:orders")
    with pytest.raises(ValueError, match="a FIFO queue"):
        sqs_record("{}", arn="arn:aws:sqs:us-east-1:1:orders.fifo")


@pytest.mark.parametrize("self_managed", [False, True])
def test_the_kits_kafka_events_have_the_samples_shapes(self_managed: bool) -> None:
    record = kafka_record(0, 15, {"a": 1}, key=b"k", headers={"h": b"v"}, topic="my-topic")
    event = kafka_event([record], self_managed=self_managed)
    name = "self-managed-kafka-event.json" if self_managed else "msk-event.json"
    assert shape_problems(aws_document(name), event) == []
    assert ("eventSourceArn" in event) is not self_managed


@pytest.mark.parametrize("self_managed", [False, True])
def test_the_local_stacks_kafka_events_have_the_samples_shapes(self_managed: bool) -> None:
    spec = KafkaEventSpec(
        "K", ("t",), 10, 0.5, True, "TRIM_HORIZON", "g", None, None, self_managed=self_managed
    )
    records = [KafkaRecord("my-topic", 0, 15, 1545084650987, b"k", b"v", [("h", b"x")])]
    event = local_kafka_event(records, "127.0.0.1:9092", spec)
    name = "self-managed-kafka-event.json" if self_managed else "msk-event.json"
    assert shape_problems(aws_document(name), event) == []
    assert event["eventSource"] == ("SelfManagedKafka" if self_managed else "aws:kafka")


@pytest.mark.parametrize("fifo", [False, True])
def test_the_local_stacks_sqs_records_have_the_samples_shapes(fifo: bool) -> None:
    """From what SQS's ReceiveMessage answers (moto's SQS) to what Lambda delivers."""
    with mock_aws():
        sqs: Any = boto3.client("sqs", region_name=REGION)
        name = "orders.fifo" if fifo else "orders"
        attributes = {"FifoQueue": "true"} if fifo else {}
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        extra = {"MessageGroupId": "g", "MessageDeduplicationId": "d"} if fifo else {}
        sqs.send_message(QueueUrl=url, MessageBody="Test message.", **extra)
        (message,) = sqs.receive_message(
            QueueUrl=url, AttributeNames=["All"], MessageAttributeNames=["All"]
        )["Messages"]
    record = lambda_sqs_record(message, f"arn:aws:sqs:{REGION}:123456789012:{name}")
    sample = aws_document("sqs-event-fifo.json" if fifo else "sqs-event-standard.json")
    assert shape_problems(sample, {"Records": [record]}) == []


def test_the_local_stacks_sqs_records_carry_motos_one_sender_id_whoever_sends() -> None:
    """Two callers with other credentials: on AWS two principals, on moto one `SenderId`, the
    user-shaped `MOTO_SENDER_ID` (docs/aws-fidelity.md), which the record hands on as it is."""
    with mock_aws():
        url = boto3.client("sqs", region_name=REGION).create_queue(QueueName="q")["QueueUrl"]
        for key in ("AKIAFIRSTCALLER00001", "AKIASECONDCALLER0002"):
            caller: Any = boto3.client(
                "sqs", region_name=REGION, aws_access_key_id=key, aws_secret_access_key="x"
            )
            caller.send_message(QueueUrl=url, MessageBody=key)
        messages = boto3.client("sqs", region_name=REGION).receive_message(
            QueueUrl=url, AttributeNames=["All"], MaxNumberOfMessages=10
        )["Messages"]
    records = [lambda_sqs_record(m, f"arn:aws:sqs:{REGION}:123456789012:q") for m in messages]
    assert [r["attributes"]["SenderId"] for r in records] == [MOTO_SENDER_ID] * 2
    assert principal(MOTO_SENDER_ID) == MOTO_SENDER_ID  # no session part, as an IAM user's


def test_the_local_stacks_stream_records_have_the_samples_shape() -> None:
    """From what DynamoDB Streams' GetRecords answers (moto's) to what Lambda delivers."""
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        streams = boto3.client("dynamodbstreams", region_name=REGION)
        dynamodb.create_table(
            TableName="TestTable",
            AttributeDefinitions=[{"AttributeName": "Id", "AttributeType": "N"}],
            KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        dynamodb.put_item(TableName="TestTable", Item={"Id": {"N": "101"}, "Message": {"S": "a"}})
        arn = dynamodb.describe_table(TableName="TestTable")["Table"]["LatestStreamArn"]
        shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        (raw,) = streams.get_records(ShardIterator=iterator)["Records"]
    record = lambda_stream_record(raw, arn)
    sample = aws_document("dynamodb-streams-event.json")
    assert shape_problems(sample, {"Records": [record]}) == []
    assert json.loads(json.dumps(record)) == record  # what crosses Lambda's JSON boundary


class _Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def invoke(self, function: FunctionSpec, event: Any) -> Invocation:
        self.events.append(event)
        return Invocation({}, None, 0.0)


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("ScheduleV2", "scheduler-event-without-payload.json"),
        ("Schedule", "eventbridge-scheduled-event.json"),
    ],
)
def test_the_local_stacks_schedules_send_what_aws_sends(kind: str, name: str) -> None:
    recorder = _Recorder()
    spec = ScheduleEventSpec("Sweep", "rate(5 minutes)", None, kind=kind)
    Scheduler(FUNCTION, spec, recorder, 1 / 30).tick()
    (event,) = recorder.events
    sample = aws_document(name)
    assert shape_problems(sample, event) == [] and (event == {}) == (sample == {})


def test_a_scheduler_payload_gets_its_context_attributes() -> None:
    recorder = _Recorder()
    text = '{"at": "<aws.scheduler.scheduled-time>", "n": "<aws.scheduler.attempt-number>"}'
    Scheduler(FUNCTION, ScheduleEventSpec("S", "rate(1 minute)", text), recorder, 1).tick()
    (event,) = recorder.events
    assert event["n"] == "1" and event["at"].endswith("Z") and "<" not in event["at"]
