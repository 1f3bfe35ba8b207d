"""The event source mapping rules of `lambda-inbox local`, on the real local backends:
SQS on a moto server, Kafka on librdkafka's mock cluster, the reaper on DynamoDB Local."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import boto3
import pytest

from devkit.aws_documents import aws_document, shape_problems
from devkit.paths import FUNCTIONS_DIR
from lambda_inbox_tools.local import kafka_poller
from lambda_inbox_tools.local.backends import kafka_mock_cluster
from lambda_inbox_tools.local.invoker import InProcessInvoker, Invocation
from lambda_inbox_tools.local.kafka_poller import KafkaPoller, KafkaRecord, next_positions
from lambda_inbox_tools.local.provision import create_topics
from lambda_inbox_tools.local.scheduler import Scheduler
from lambda_inbox_tools.local.sqs_poller import SqsPoller, messages_to_delete
from lambda_inbox_tools.local.template import (
    FunctionSpec,
    KafkaEventSpec,
    QueueSpec,
    ScheduleEventSpec,
    SqsEventSpec,
)
from lambda_inbox_tools.services.queues import receive_all

pytestmark = pytest.mark.integration

CLUSTER_ARN = (
    "arn:aws:kafka:us-east-1:123456789012:cluster/payments/abcd1234-ab12-cd34-ef56-abcdef123456-1"
)

Respond = Callable[[Mapping[str, Any]], Invocation]


class ScriptedInvoker:
    """Records each event and answers with `respond(event)`."""

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.events: list[Mapping[str, Any]] = []

    def invoke(self, function: FunctionSpec, event: Mapping[str, Any]) -> Invocation:
        self.events.append(event)
        return self.respond(event)


def ok(response: Any = None) -> Invocation:
    return Invocation(response, None, 0.0)


FUNCTION = FunctionSpec("Fn", "fn", Path("."), "app.handler", 3, 128, {})


@pytest.fixture
def sqs(moto_server_endpoint: str) -> Any:
    return boto3.client("sqs", endpoint_url=moto_server_endpoint, region_name="us-east-1")


def make_queue(sqs: Any, *, visibility: int = 1, max_receive: int = 2) -> tuple[QueueSpec, str]:
    name = f"q-{uuid.uuid4().hex[:8]}"
    dlq_url = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive})
    url = sqs.create_queue(
        QueueName=name,
        Attributes={"VisibilityTimeout": str(visibility), "RedrivePolicy": redrive},
    )["QueueUrl"]
    arn = f"arn:aws:sqs:us-east-1:123456789012:{name}"
    return QueueSpec("Q", name, url, arn, False, visibility, {}, dlq_arn, max_receive), dlq_url


def depth(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def bodies(event: Mapping[str, Any]) -> list[str]:
    return [record["body"] for record in event["Records"]]


def test_partial_batch_response_deletes_successes_and_failures_come_back(sqs: Any) -> None:
    queue, dlq_url = make_queue(sqs, max_receive=5)
    for n in range(4):
        sqs.send_message(QueueUrl=queue.url, MessageBody=f"m{n}")

    def respond(event: Mapping[str, Any]) -> Invocation:
        failed = [r["messageId"] for r in event["Records"] if r["body"] == "m2"]
        return ok({"batchItemFailures": [{"itemIdentifier": m} for m in failed]})

    invoker = ScriptedInvoker(respond)
    event = SqsEventSpec("E", queue.arn, 10, 0, True)
    poller = SqsPoller(sqs, FUNCTION, event, queue, invoker)
    assert poller.poll_once() == 4
    assert sorted(bodies(invoker.events[0])) == ["m0", "m1", "m2", "m3"]
    record = invoker.events[0]["Records"][0]
    assert record["eventSource"] == "aws:sqs" and record["eventSourceARN"] == queue.arn
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert depth(sqs, queue.url) == 1  # only the failure is left, invisible
    time.sleep(1.2)  # the visibility timeout
    assert poller.poll_once() == 1
    again = invoker.events[1]["Records"][0]
    assert again["body"] == "m2" and again["attributes"]["ApproximateReceiveCount"] == "2"
    assert depth(sqs, dlq_url) == 0


def test_failing_message_goes_to_the_dlq_after_max_receive_count(sqs: Any) -> None:
    queue, dlq_url = make_queue(sqs, max_receive=2)
    sqs.send_message(QueueUrl=queue.url, MessageBody="always fails")
    invoker = ScriptedInvoker(
        lambda event: ok(
            {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}
        )
    )
    poller = SqsPoller(sqs, FUNCTION, SqsEventSpec("E", queue.arn, 10, 0, True), queue, invoker)
    deadline = time.monotonic() + 15
    while depth(sqs, dlq_url) == 0 and time.monotonic() < deadline:
        poller.poll_once()
    assert len(invoker.events) == 2  # maxReceiveCount receives, then SQS moves it
    assert depth(sqs, dlq_url) == 1 and depth(sqs, queue.url) == 0
    moved = sqs.receive_message(QueueUrl=dlq_url)["Messages"][0]
    assert moved["Body"] == "always fails"


def test_the_batching_window_is_scaled_with_the_visibility_timeout(sqs: Any) -> None:
    """A 20 s window on a queue whose 30 s visibility timeout runs locally as 1 s: unscaled, the
    window outlived the timeout, the same message came back into its own batch, and one that
    succeeded ended in the DLQ."""
    queue, dlq_url = make_queue(sqs, visibility=1, max_receive=2)
    queue = QueueSpec(**{**queue.__dict__, "visibility_timeout": 30})  # the template's value
    sqs.send_message(QueueUrl=queue.url, MessageBody="once")
    invoker = ScriptedInvoker(lambda event: ok({"batchItemFailures": []}))
    event = SqsEventSpec("E", queue.arn, 10, 20, True)
    poller = SqsPoller(sqs, FUNCTION, event, queue, invoker, scale=1 / 30)
    assert (round(poller.window, 2), poller.visibility_timeout) == (0.67, 1)
    started = time.monotonic()
    assert poller.poll_once() == 1
    assert time.monotonic() - started < 3
    assert bodies(invoker.events[0]) == ["once"]
    assert depth(sqs, queue.url) == 0 and depth(sqs, dlq_url) == 0


def test_a_window_longer_than_the_visibility_timeout_extends_it_as_aws_does(sqs: Any) -> None:
    """ "If your batch window is greater than 0, and (batch window) + (function timeout) > (queue
    visibility timeout), then your effective queue visibility timeout is (batch window) +
    (function timeout) + 30s" (AWS, "Using Lambda with Amazon SQS")."""
    queue, _ = make_queue(sqs, visibility=10)
    event = SqsEventSpec("E", queue.arn, 10, 20, True)
    poller = SqsPoller(sqs, FUNCTION, event, queue, ScriptedInvoker(lambda e: ok()))
    assert poller.visibility_timeout == 20 + FUNCTION.timeout + 30


@pytest.mark.parametrize(
    "invocation",
    [
        Invocation(None, "crashed", 0.0),
        ok({"batchItemFailures": [{"itemIdentifier": "not-in-the-batch"}]}),
        ok({"batchItemFailures": [{"itemIdentifier": ""}]}),
        ok({"batchItemFailures": [{"itemIdentifier": None}]}),
        ok({"batchItemFailures": [{"messageId": "a"}]}),
        ok("ok"),
        ok(["a"]),
    ],
    ids=[
        "invocation-error",
        "unknown-identifier",
        "empty-identifier",
        "null-identifier",
        "bad-key-name",
        "plain-string-response",
        "list-response",
    ],
)
def test_whole_batch_fails(invocation: Invocation) -> None:
    assert messages_to_delete(["a", "b"], invocation, True) == []


def test_success_without_partial_responses_deletes_everything() -> None:
    failures = ok({"batchItemFailures": [{"itemIdentifier": "a"}]})
    assert messages_to_delete(["a", "b"], failures, False) == ["a", "b"]
    assert messages_to_delete(["a", "b"], ok("ok"), False) == ["a", "b"]
    assert messages_to_delete(["a", "b"], ok(None), True) == ["a", "b"]
    assert messages_to_delete(["a", "b"], ok({}), True) == ["a", "b"]
    assert messages_to_delete(["a", "b"], ok({"batchItemFailures": []}), True) == ["a", "b"]
    assert messages_to_delete(["a", "b"], ok({"batchItemFailures": None}), True) == ["a", "b"]


# ---------------------------------------------------------------------------- Kafka


@pytest.fixture(scope="module")
def kafka() -> Iterator[str]:
    with kafka_mock_cluster() as bootstrap:
        yield bootstrap


def produce(
    bootstrap: str, topic: str, values: list[tuple[int, str]], key: bytes | None = None
) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, value in values:
        producer.produce(topic, value=value.encode(), partition=partition, key=key)
    assert producer.flush(10) == 0


def offsets(event: Mapping[str, Any], topic_partition: str) -> list[int]:
    return [r["offset"] for r in event["records"].get(topic_partition, [])]


def kafka_event(topic: str, **overrides: Any) -> KafkaEventSpec:
    values: dict[str, Any] = {
        "name": "K",
        "topics": (topic,),
        "batch_size": 100,
        "batching_window": 1.0,
        "report_batch_item_failures": True,
        "starting_position": "TRIM_HORIZON",
        "consumer_group": f"g-{uuid.uuid4().hex[:6]}",
        "maximum_retry_attempts": 10,
        "on_failure_arn": None,
    } | overrides
    return KafkaEventSpec(**values)


def test_kafka_partition_retries_from_the_first_failed_offset(kafka: str) -> None:
    topic = f"t-{uuid.uuid4().hex[:6]}"
    create_topics(kafka, [topic])
    produce(kafka, topic, [(0, f"p0-{n}") for n in range(5)] + [(1, f"p1-{n}") for n in range(3)])
    p0, p1 = f"{topic}-0", f"{topic}-1"
    failed: list[Mapping[str, Any]] = []

    def respond(event: Mapping[str, Any]) -> Invocation:
        # The first batch that reaches offset 4 of partition 0 fails at offsets 2 and 4: the
        # first one wins. (Which records a batch holds depends on the cluster's fetches: on a
        # busy machine partition 1 may come in a batch of its own.)
        if not failed and offsets(event, p0)[-1:] == [4]:
            failed.append(event)
            return ok(
                {
                    "batchItemFailures": [
                        {"itemIdentifier": {"topic-partition": p0, "offset": 4}},
                        {"itemIdentifier": {"topic-partition": p0, "offset": 2}},
                    ]
                }
            )
        return ok({"batchItemFailures": []})

    invoker = ScriptedInvoker(respond)
    poller = KafkaPoller(kafka, FUNCTION, kafka_event(topic), invoker, retry_pause=0)
    try:
        deadline = time.monotonic() + 20
        while poller.stats.committed < 8 and time.monotonic() < deadline:
            poller.poll_once()
        assert all(event["eventSource"] == "aws:kafka" for event in invoker.events)
        assert failed, "no batch reached offset 4 of partition 0"
        position = invoker.events.index(failed[0])
        assert 2 in offsets(failed[0], p0)
        later = [offsets(event, p0) for event in invoker.events[position + 1 :]]
        assert next(batch for batch in later if batch) == [
            2,
            3,
            4,
        ]  # re-read from the failed offset
        # Partition 0 was read whole before the failure; partition 1, which never failed, once.
        delivered = [o for event in invoker.events[: position + 1] for o in offsets(event, p0)]
        assert sorted(set(delivered)) == [0, 1, 2, 3, 4]
        assert [o for event in invoker.events for o in offsets(event, p1)] == [0, 1, 2]
        assert poller.lag() == 0
    finally:
        poller.stop()


def test_kafka_invocation_error_retries_the_batch_then_gives_up_in_aws_shape(
    kafka: str, sqs: Any
) -> None:
    topic = f"t-held-{uuid.uuid4().hex[:6]}"  # hyphens in the topic, as AWS allows
    create_topics(kafka, [topic])
    produce(kafka, topic, [(0, "a"), (0, "b"), (1, "c")])
    destination = sqs.create_queue(QueueName=f"failures-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    invoker = ScriptedInvoker(lambda event: Invocation(None, "crashed", 0.0))
    event = kafka_event(
        topic, maximum_retry_attempts=2, cluster_arn=CLUSTER_ARN, batching_window=0.05
    )
    poller = KafkaPoller(
        kafka, FUNCTION, event, invoker, sqs=sqs, on_failure_url=destination, retry_pause=0
    )
    try:
        deadline = time.monotonic() + 20
        while poller.lag() and time.monotonic() < deadline:
            poller.poll_once()
        assert all(e["eventSourceArn"] == CLUSTER_ARN for e in invoker.events)
        assert poller.lag() == 0
        records = [json.loads(m["Body"]) for m in receive_all(sqs, destination)]
        assert records, "nothing given up"
        sample = aws_document("kafka-on-failure-sqs-retries-exhausted.json")
        for record in records:
            assert shape_problems(sample, record) == []
            assert record["requestContext"]["approximateInvokeCount"] == 3
            assert record["KafkaBatchInfo"]["bootstrapServers"] == kafka
        given_up = {
            key: (int(r["firstRecordOffset"]), int(r["lastRecordOffset"]))
            for record in records
            for key, r in record["KafkaBatchInfo"]["recordsInfo"].items()
        }
        assert given_up == {f"{topic}-0": (0, 1), f"{topic}-1": (0, 0)}
    finally:
        poller.stop()


def test_kafka_infinite_retries_with_a_destination_stop_after_10_as_aws_caps_them(
    kafka: str, sqs: Any
) -> None:
    topic = f"t-{uuid.uuid4().hex[:6]}"
    create_topics(kafka, [topic])
    produce(kafka, topic, [(0, "a")])
    destination = sqs.create_queue(QueueName=f"failures-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    invoker = ScriptedInvoker(lambda event: Invocation(None, "crashed", 0.0))
    event = kafka_event(
        topic,
        maximum_retry_attempts=None,
        on_failure_arn="arn:aws:sqs:us-east-1:1:f",
        batching_window=0.05,
    )
    assert event.retry_limit == 10
    assert kafka_event(topic, maximum_retry_attempts=None).retry_limit is None  # no destination
    poller = KafkaPoller(
        kafka, FUNCTION, event, invoker, sqs=sqs, on_failure_url=destination, retry_pause=0
    )
    try:
        deadline = time.monotonic() + 30
        while poller.stats.given_up_batches == 0 and time.monotonic() < deadline:
            poller.poll_once()
        assert len(invoker.events) == 11  # the first attempt and 10 retries
        [record] = [json.loads(m["Body"]) for m in receive_all(sqs, destination)]
        assert record["requestContext"]["approximateInvokeCount"] == 11
    finally:
        poller.stop()


def test_a_kafka_batch_too_large_to_invoke_is_given_up_at_once(
    kafka: str, sqs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lambda's payload limit (6 MB) lowered to 100 bytes: the batch is never invoked."""
    monkeypatch.setattr(kafka_poller, "MAX_PAYLOAD_BYTES", 100)
    topic = f"t-{uuid.uuid4().hex[:6]}"
    create_topics(kafka, [topic])
    produce(kafka, topic, [(0, "x" * 200)])
    destination = sqs.create_queue(QueueName=f"failures-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    invoker = ScriptedInvoker(lambda event: ok({"batchItemFailures": []}))
    poller = KafkaPoller(
        kafka, FUNCTION, kafka_event(topic), invoker, sqs=sqs, on_failure_url=destination
    )
    try:
        deadline = time.monotonic() + 20
        while poller.stats.given_up_batches == 0 and time.monotonic() < deadline:
            poller.poll_once()
        assert invoker.events == [] and poller.lag() == 0
        [record] = [json.loads(m["Body"]) for m in receive_all(sqs, destination)]
        sample = aws_document("kafka-on-failure-sqs-payload-size-exceeded.json")
        assert shape_problems(sample, record) == []
        assert record["requestContext"]["condition"] == "MaximumPayloadSizeExceeded"
        assert record["KafkaBatchInfo"]["payloadSize"] > 100
    finally:
        poller.stop()


def test_self_managed_kafka_events_say_so_as_aws_sends_them(kafka: str) -> None:
    """Read from the local cluster, named as the template configures the source's servers."""
    topic = f"t-{uuid.uuid4().hex[:6]}"
    create_topics(kafka, [topic])
    produce(kafka, topic, [(0, "a")], key=b"k")
    invoker = ScriptedInvoker(lambda event: ok({"batchItemFailures": []}))
    servers = ("b-1.kafka.example.com:9092", "b-2.kafka.example.com:9092")
    spec = kafka_event(topic, self_managed=True, bootstrap_servers=servers)
    poller = KafkaPoller(kafka, FUNCTION, spec, invoker)
    try:
        deadline = time.monotonic() + 20
        while not invoker.events and time.monotonic() < deadline:
            poller.poll_once()
        [event] = invoker.events
        assert event["eventSource"] == "SelfManagedKafka" and "eventSourceArn" not in event
        assert event["bootstrapServers"] == ",".join(servers)
        assert shape_problems(aws_document("self-managed-kafka-event.json"), event) == [], event
    finally:
        poller.stop()


def test_a_kafka_identifier_of_another_spelling_fails_the_whole_batch() -> None:
    """AWS's page spells it `topic-partition`; "Any invalid topic-partition_number or offset
    returned that was not present in the invoked event will be treated as failure and entire
    batch will be retried"."""
    records = [KafkaRecord("pay-ments", 0, n, 0, None, b"v", []) for n in (5, 6)]
    documented = ok(
        {"batchItemFailures": [{"itemIdentifier": {"topic-partition": "pay-ments-0", "offset": 6}}]}
    )
    assert next_positions(records, documented, True) == {("pay-ments", 0): 6}
    for identifier in (
        {"partition": "pay-ments-0", "offset": 6},
        {"topic-partition": "pay-ments-0", "offset": "6"},
        {"topic-partition": "pay-ments-0", "offset": 7},
    ):
        other = ok({"batchItemFailures": [{"itemIdentifier": identifier}]})
        assert next_positions(records, other, True) == {("pay-ments", 0): 5}, identifier


# ---------------------------------------------------------------------------- schedules


def test_schedule_invokes_the_reaper_which_reaps_a_stuck_lease(
    dynamodb_local_endpoint: str, sqs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from devkit.leases import crashed_claim
    from devkit.tables import create_inbox_table
    from lambda_inbox import InboundMessage, KeyStrategy

    dynamodb = boto3.client("dynamodb", endpoint_url=dynamodb_local_endpoint)
    table = f"inbox-{uuid.uuid4().hex[:8]}"
    create_inbox_table(dynamodb, table)
    dlq = sqs.create_queue(QueueName=f"ntf-dlq-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    body = json.dumps({"event_id": "evt-1", "customer_id": "c", "order_id": "o", "template": "t"})
    message = InboundMessage("m-1", "m-1", body.encode(), "arn:aws:sqs:local:ntf", 0)
    crashed_claim(
        dynamodb,
        table=table,
        consumer="customer-notifications",
        message=message,
        keys=KeyStrategy.from_body("event_id"),
        claimed_at=time.time() - 3600,
    )

    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_local_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", sqs.meta.endpoint_url)
    reaper = FunctionSpec(
        "InboxReaperFunction",
        "reaper",
        FUNCTIONS_DIR / "inbox_reaper",
        "app.handler",
        120,
        512,
        {
            "INBOX_TABLE": table,
            "INBOX_REAPER_DLQ_URLS": json.dumps({"customer-notifications": dlq}),
            "INBOX_REAPER_LEASE_GRACE_SECONDS": "1200",
        },
    )
    event = ScheduleEventSpec("Sweep", "rate(5 minutes)", None)
    scheduler = Scheduler(reaper, event, InProcessInvoker([reaper]), scale=1 / 300)
    assert scheduler.period == 1
    scheduler.start()
    try:
        deadline = time.monotonic() + 15
        while scheduler.stats.invocations < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        scheduler.stop()
    first, second = scheduler.stats.responses[:2]
    assert (first["reaped"], first["dead_lettered"]) == (1, 1)
    assert (second["reaped"], second["dead_lettered"]) == (0, 0)
    [dead] = sqs.receive_message(QueueUrl=dlq)["Messages"]
    assert json.loads(dead["Body"])["event_id"] == "evt-1"
