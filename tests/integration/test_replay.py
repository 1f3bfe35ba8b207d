"""`lambda-inbox kafka-replay` from failure records to committed payments: librdkafka's mock
cluster holds the records, a moto server the on-failure destinations (SQS and S3) and the replay
queue, DynamoDB Local the inbox. Interrupted once, then run again."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devkit.app_state import AppState
from devkit.events import (
    PAYMENT_REPLAY_QUEUE_ARN,
    kafka_event,
    kafka_record,
    sqs_event,
    sqs_record_from,
)
from devkit.handlers import load_function
from devkit.paths import FUNCTIONS_DIR
from devkit.payloads import payment
from lambda_inbox_tools.kafka_replay import ClusterReader, KafkaReplay
from lambda_inbox_tools.local.backends import kafka_mock_cluster
from lambda_inbox_tools.services.offline import REGION
from lambda_inbox_tools.services.queues import create_queue, receive_all
from lambda_inbox_tools.testing.values import avro_value, protobuf_value
from tests.cli_support import Cli

confluent_kafka = pytest.importorskip("confluent_kafka")

AVSC = FUNCTIONS_DIR / "payment_events" / "schemas" / "payment_captured.avsc"
TOPIC = "payments"


@pytest.fixture
def cluster() -> Iterator[str]:
    with kafka_mock_cluster() as bootstrap:
        yield bootstrap


def produce(bootstrap: str, values: list[bytes], partition: int) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(TOPIC, value=value, partition=partition, key=b"k")
    assert producer.flush(10) == 0


def failure_record(partition: int, first: int, last: int) -> str:
    """What an MSK event source mapping sends to an SQS on-failure destination."""
    return json.dumps(
        {
            "requestContext": {
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": 11,
            },
            "KafkaBatchInfo": {
                "batchSize": last - first + 1,
                "topic": TOPIC,
                "partition": partition,
                "firstOffset": first,
                "lastOffset": last,
            },
        }
    )


def deliver_replay_queue(aws: AppState, module: Any, queue_url: str) -> dict[str, Any]:
    """The replay queue's messages, handed to payment-events as its SQS event source would."""
    messages = receive_all(aws.sqs, queue_url, delete=True)
    event = sqs_event(
        *(
            sqs_record_from(m, arn=PAYMENT_REPLAY_QUEUE_ARN, message_id=f"replayed-{n}")
            for n, m in enumerate(messages)
        )
    )
    response: dict[str, Any] = module.handler(event, None) if messages else {}
    return response


def test_a_replay_from_sqs_failure_records_commits_each_payment_once_interrupted_and_rerun(
    aws: AppState, cluster: str, moto_server_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_function("payment_events")
    sqs = aws.sqs
    failures = create_queue(sqs, f"msk-failures-{uuid.uuid4().hex[:8]}")
    replay_queue = create_queue(sqs, f"payment-replay-{uuid.uuid4().hex[:8]}")
    bodies = [payment(n, f"cust-{n % 3}", 100 + n) for n in range(8)]
    proto = module.VALUE_FORMATS.protobuf_class()
    # Partition 0: Avro in the Confluent wire format; partition 1: Protobuf, framed likewise.
    produce(cluster, [avro_value(AVSC, b, schema_id=1) for b in bodies[:4]], partition=0)
    produce(cluster, [protobuf_value(proto(**b), schema_id=2) for b in bodies[4:]], partition=1)
    # Offsets 0 and 1 of partition 0 committed before the event source gave up on 0..3.
    reader = ClusterReader(cluster)
    early = reader.read(TOPIC, 0, 0, 1).records
    reader.close()
    assert module.handler(kafka_event(early), None) == {"batchItemFailures": []}
    sqs.send_message(QueueUrl=failures, MessageBody=failure_record(0, 0, 3))
    sqs.send_message(QueueUrl=failures, MessageBody=failure_record(1, 0, 3))

    # The first run stops after its first failure record (as Ctrl-C would between batches).
    stop = threading.Event()
    first_run = KafkaReplay(
        sqs,
        replay_queue,
        reader=lambda: ClusterReader(cluster),
        stop=stop,
        on_progress=lambda report, line: stop.set(),
    )
    first_run.from_queue(failures, visibility_timeout=30, wait=0)
    assert first_run.report.interrupted and first_run.report.sent == 4
    assert (
        aws.sqs.get_queue_attributes(
            QueueUrl=failures, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
        == "1"
    )  # the other one, visible again

    # A dry run sends and deletes nothing.
    cli = Cli(capsys, AWS_ENDPOINT_URL_SQS=moto_server_endpoint)
    dry = cli(
        "kafka-replay", "--from", failures, "--to", replay_queue,
        "--bootstrap-servers", cluster, "--dry-run", "--json",
    )  # fmt: skip
    assert dry.code == 0, dry.err
    assert json.loads(dry.out)["would_send"] == 4

    # The rerun, through the command line, replays what is left and deletes it.
    rerun = cli(
        "kafka-replay", "--from", failures, "--to", replay_queue,
        "--bootstrap-servers", cluster, "--json",
    )  # fmt: skip
    assert rerun.code == 0, rerun.err
    assert json.loads(rerun.out)["sent"] == 4
    assert receive_all(sqs, failures) == []

    assert deliver_replay_queue(aws, module, replay_queue) == {"batchItemFailures": []}
    for customer in ("cust-0", "cust-1", "cust-2"):
        mine = [b for b in bodies if b["customer_id"] == customer]
        assert aws.balance(customer) == (sum(b["amount_cents"] for b in mine), len(mine))
    outcomes = {r["message_key"]: r["status"] for r in aws.inbox_records().values()}
    assert outcomes == {b["event_id"]: "COMPLETED" for b in bodies}
    aws.assert_dlq_empty()

    # Running it again finds nothing left; replaying the same records again is a no-op.
    again = cli("kafka-replay", "--from", failures, "--to", replay_queue, "--json")
    assert again.code == 0 and json.loads(again.out)["batches"] == 0


def test_a_replay_from_an_s3_destination_uses_its_records_and_filters(
    aws: AppState, moto_server_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_function("payment_events")
    s3 = boto3.client(
        "s3",
        endpoint_url=moto_server_endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    bucket = f"msk-failures-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    replay_queue = create_queue(aws.sqs, f"payment-replay-{uuid.uuid4().hex[:8]}")
    records = [kafka_record(2, 40 + n, payment(20 + n, "cust-s3", 10)) for n in range(3)]
    other = [kafka_record(0, 7, payment(30, "cust-other", 10), topic="refunds")]
    for name, batch in (("a.json", records), ("b.json", other)):
        document = {
            "requestContext": {"condition": "MaximumRecordAgeExceeded"},
            "KafkaBatchInfo": {"topic": batch[0]["topic"], "partition": batch[0]["partition"]},
            "payload": kafka_event(batch),
        }
        s3.put_object(Bucket=bucket, Key=f"msk/{name}", Body=json.dumps(document).encode())
    s3.put_object(Bucket=bucket, Key="msk/garbage.json", Body=b"not json")

    run = Cli(capsys, AWS_ENDPOINT_URL_SQS=moto_server_endpoint, AWS_ENDPOINT_URL_S3=moto_server_endpoint)(
        "kafka-replay", "--from", f"s3://{bucket}/msk/", "--to", replay_queue,
        "--topic", TOPIC, "--json",
    )  # fmt: skip

    report = json.loads(run.out)
    assert run.code == 1  # the object that is no failure record is reported
    assert (report["sent"], report["filtered_out"]) == (3, 1)
    assert any("not JSON" in error for error in report["errors"])
    assert deliver_replay_queue(aws, module, replay_queue) == {"batchItemFailures": []}
    assert aws.balance("cust-s3") == (30, 3)
    assert aws.balance("cust-other") == (0, 0)
