"""`lambda-inbox send` with a binary value: to a Kafka topic or a Kinesis stream as its bytes (an
Avro payment, read back from the mock cluster and the moto server), refused for an SQS queue with
a usage error."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest

from devkit.paths import FUNCTIONS_DIR
from lambda_inbox_tools.local.backends import kafka_mock_cluster
from lambda_inbox_tools.replay import ClusterReader
from lambda_inbox_tools.services.offline import local_client
from lambda_inbox_tools.services.queues import create_queue
from lambda_inbox_tools.testing.values import avro_value
from tests.cli_support import Cli

AVSC = FUNCTIONS_DIR / "payment_events" / "schemas" / "payment_captured.avsc"
PAYMENT = {
    "event_id": "e-1",
    "payment_id": "p-1",
    "order_id": "o-1",
    "customer_id": "c-1",
    "amount_cents": 5,
}


def test_a_binary_file_goes_to_a_topic_as_its_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    value = avro_value(AVSC, PAYMENT, schema_id=3)
    (tmp_path / "payment.avro").write_bytes(value)
    with kafka_mock_cluster() as bootstrap:
        run = Cli(capsys)(
            "send", "--topic", "payments", "--bootstrap-servers", bootstrap,
            "--file", str(tmp_path / "payment.avro"), "--key", "c-1",
        )  # fmt: skip
        assert run.code == 0, run.err
        partition = int(run.out.split()[3])
        reader = ClusterReader(bootstrap)
        (record,) = reader.read("payments", partition, 0, 0).records
        reader.close()
    assert base64.b64decode(record["value"]) == value


def test_a_binary_body_is_refused_for_a_queue(
    tmp_path: Path, moto_server_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = create_queue(local_client("sqs", moto_server_endpoint), f"q-{uuid.uuid4().hex[:8]}")
    (tmp_path / "payment.avro").write_bytes(b"\x00\xff\xfe")
    run = Cli(capsys, AWS_ENDPOINT_URL_SQS=moto_server_endpoint)(
        "send", "--queue", queue, "--file", str(tmp_path / "payment.avro")
    )
    assert run.code == 2
    assert "must be UTF-8 text" in run.err


def test_a_record_goes_to_a_kinesis_stream_and_a_missing_stream_is_named(
    tmp_path: Path, moto_server_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    kinesis = local_client("kinesis", moto_server_endpoint)
    name = f"s-{uuid.uuid4().hex[:8]}"
    kinesis.create_stream(StreamName=name, ShardCount=1)
    kinesis.get_waiter("stream_exists").wait(StreamName=name)
    value = avro_value(AVSC, PAYMENT, schema_id=3)
    (tmp_path / "payment.avro").write_bytes(value)
    cli = Cli(capsys, AWS_ENDPOINT_URL_KINESIS=moto_server_endpoint)
    run = cli("send", "--stream", name, "--file", str(tmp_path / "payment.avro"), "--key", "c-1")
    assert run.code == 0, run.err
    assert f"stream {name} shard_id shardId-000000000000 sequence_number" in run.out
    iterator = kinesis.get_shard_iterator(
        StreamName=name, ShardId="shardId-000000000000", ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    (record,) = kinesis.get_records(ShardIterator=iterator)["Records"]
    assert (record["Data"], record["PartitionKey"]) == (value, "c-1")
    missing = cli("send", "--stream", "no-such-stream", "--body", "{}")
    assert missing.code == 2
    assert "no Kinesis stream 'no-such-stream'" in missing.err
