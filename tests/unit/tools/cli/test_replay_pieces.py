"""replay's pieces that need no service: reading on-failure records in AWS's documented shapes
(tests/fixtures/aws/), what cannot be replayed whole, and the MSK IAM sign-in (AWS's signer makes
its token locally from the credentials, so it runs offline)."""

from __future__ import annotations

import base64
import copy
import json
import time
import urllib.parse
from typing import Any

import pytest

from devkit.aws_documents import aws_document
from lambda_inbox_tools.replay import (
    KafkaBatch,
    KinesisBatch,
    NotAFailureRecord,
    StreamBatch,
    failure_record,
)
from lambda_inbox_tools.replay.cluster import ClusterError, ClusterReader, client_config
from lambda_inbox_tools.testing.events import kafka_event, kafka_record

BIG_FIRST = 49601189658422359378836298521827638475320189012309704722
BIG_LAST = 49601189658422359378836298522902373528957594348623495186


def kafka_batches(document: Any) -> list[KafkaBatch]:
    batches = failure_record(document, "test").batches
    assert all(isinstance(b, KafkaBatch) for b in batches)
    return [b for b in batches if isinstance(b, KafkaBatch)]


def test_aws_sqs_record_names_every_partition_with_string_offsets_and_the_cluster() -> None:
    document = aws_document("kafka-on-failure-sqs-retries-exhausted.json")
    record = failure_record(document, "sqs message 1")
    assert record.condition == "RetryAttemptsExhausted"
    batches = kafka_batches(document)
    assert [(b.topic, b.partition, b.first, b.last) for b in batches] == [
        ("Topic", 0, BIG_FIRST, BIG_LAST),
        ("Topic", 1, BIG_FIRST, BIG_LAST),
    ]
    assert all(b.records is None and b.problem is None for b in batches)
    assert {b.bootstrap_servers for b in batches} == {"..."}
    assert batches[0].label == f"Topic-0 offsets {BIG_FIRST}..{BIG_LAST}"


def test_aws_record_of_a_batch_too_large_to_invoke_reads_the_same() -> None:
    document = aws_document("kafka-on-failure-sqs-payload-size-exceeded.json")
    assert document["responseContext"] is None
    record = failure_record(document, "sqs")
    assert record.condition == "MaximumPayloadSizeExceeded"
    assert [(b.topic, b.partition) for b in kafka_batches(document)] == [("Topic", 0), ("Topic", 1)]


def test_aws_s3_record_carries_the_event_as_an_escaped_string() -> None:
    (batch,) = kafka_batches(aws_document("kafka-on-failure-s3.json"))
    assert (batch.topic, batch.partition, batch.first, batch.last) == ("mytopic", 0, 15, 15)
    assert (
        batch.records is not None
        and batch.records[0]["value"] == "SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg=="
    )
    assert batch.bootstrap_servers == "..."  # KafkaBatchInfo's, before the payload's


def test_aws_kafka_topic_destination_record_carries_the_event_as_an_object() -> None:
    document = aws_document("kafka-on-failure-kafka-topic.json")
    (batch,) = kafka_batches(document)
    assert (batch.topic, batch.partition, batch.first, batch.last) == ("my-topic", 0, 100, 100)
    assert batch.condition == "RetriesExhausted"
    assert batch.bootstrap_servers == "b-1.mycluster.abc123.kafka.us-east-1.amazonaws.com:9098"


def test_aws_dynamodb_stream_record_names_a_shard_range() -> None:
    (batch,) = failure_record(aws_document("dynamodb-streams-on-failure.json"), "q").batches
    assert isinstance(batch, StreamBatch)
    assert (batch.shard_id, batch.start, batch.end) == (
        "shardId-00000001573689847184-864758bb",
        "800000000003126276362",
        "800000000003126276362",
    )
    assert batch.table == "mytable" and batch.batch_size == 1 and batch.problem is None
    assert batch.first_arrival == "2019-11-14T00:13:19Z"


def test_topics_with_hyphens_split_at_the_last_one() -> None:
    document = aws_document("kafka-on-failure-sqs-retries-exhausted.json")
    ranges = document["KafkaBatchInfo"]["recordsInfo"]
    ranges["payments-held-eu-12"] = {"firstRecordOffset": "3", "lastRecordOffset": "9"}
    batch = kafka_batches(document)[-1]
    assert (batch.topic, batch.partition, batch.first, batch.last) == ("payments-held-eu", 12, 3, 9)


@pytest.mark.parametrize(
    ("offsets", "problem"),
    [
        ({"firstRecordOffset": "9", "lastRecordOffset": "3"}, "9..3 run backwards"),
        ({"firstRecordOffset": "nine", "lastRecordOffset": "12"}, "are not numbers"),
        ({"lastRecordOffset": "12"}, "are not numbers"),
        ({"firstRecordOffset": -1, "lastRecordOffset": "2"}, "are not numbers"),
    ],
)
def test_a_range_that_cannot_be_replayed_whole_is_a_problem_not_a_drop(
    offsets: dict[str, Any], problem: str
) -> None:
    document = aws_document("kafka-on-failure-sqs-retries-exhausted.json")
    document["KafkaBatchInfo"]["recordsInfo"] = {"payments-0": offsets}
    (batch,) = kafka_batches(document)
    assert batch.problem is not None and problem in batch.problem


def test_a_partition_key_without_a_partition_number_is_a_problem() -> None:
    document = aws_document("kafka-on-failure-sqs-retries-exhausted.json")
    document["KafkaBatchInfo"]["recordsInfo"] = {
        "payments": {"firstRecordOffset": "1", "lastRecordOffset": "1"}
    }
    (batch,) = kafka_batches(document)
    assert batch.problem == "'payments' is not <topic>-<partition>"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"startSequenceNumber": "900", "endSequenceNumber": "800"}, "run backwards"),
        ({"startSequenceNumber": ""}, "lacks startSequenceNumber"),
        ({"streamArn": "arn:aws:sqs:us-east-1:1:q"}, "is not a DynamoDB stream ARN"),
    ],
)
def test_a_stream_range_that_cannot_be_read_is_a_problem(
    change: dict[str, str], problem: str
) -> None:
    document = aws_document("dynamodb-streams-on-failure.json")
    document["DDBStreamBatchInfo"].update(change)
    (batch,) = failure_record(document, "q").batches
    assert batch.problem is not None and problem in batch.problem


def test_an_s3_payload_that_is_no_json_falls_back_to_the_offsets() -> None:
    document = copy.deepcopy(aws_document("kafka-on-failure-s3.json"))
    document["payload"] = "<Whole Event>"  # the page's own placeholder
    assert [b.records for b in kafka_batches(document)] == [None, None]


def test_the_kits_events_read_back_as_s3_payload_records() -> None:
    event = kafka_event(
        [kafka_record(0, 5, {"a": 1}), kafka_record(0, 6, {"a": 2}), kafka_record(1, 9, {"a": 3})]
    )
    document = aws_document("kafka-on-failure-s3.json") | {"payload": json.dumps(event)}
    batches = sorted(kafka_batches(document), key=lambda b: b.partition)
    assert [(b.partition, b.first, b.last, len(b.records or [])) for b in batches] == [
        (0, 5, 6, 2),
        (1, 9, 9, 1),
    ]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ([], "not a JSON object"),
        ({"requestContext": {}}, "no KafkaBatchInfo, DDBStreamBatchInfo or KinesisBatchInfo"),
        ({"KafkaBatchInfo": {"batchSize": 1}}, "no recordsInfo and no payload"),
        ({"KafkaBatchInfo": {"recordsInfo": {}}}, "names no partition"),
    ],
)
def test_what_is_no_on_failure_record_says_why(document: object, reason: str) -> None:
    with pytest.raises(NotAFailureRecord, match=reason):
        failure_record(document, "origin")


def test_an_unreachable_cluster_is_one_error_within_seconds() -> None:
    reader = ClusterReader("127.0.0.1:9")  # nothing listens on the discard port
    started = time.monotonic()
    with pytest.raises(ClusterError, match=r"cannot reach the Kafka cluster at 127\.0\.0\.1:9"):
        reader.check(timeout=2)
    reader.close()
    assert time.monotonic() - started < 5


def test_msk_iam_signs_in_with_a_token_from_aws_signer() -> None:
    config = client_config("b-1.example:9098", "msk-iam", "us-east-1")
    assert (config["security.protocol"], config["sasl.mechanism"]) == ("SASL_SSL", "OAUTHBEARER")
    token, expires = config["oauth_cb"](None)
    padded = token + "=" * (-len(token) % 4)
    url = urllib.parse.urlsplit(base64.urlsafe_b64decode(padded).decode())
    query = urllib.parse.parse_qs(url.query)
    assert url.netloc == "kafka.us-east-1.amazonaws.com"
    assert query["Action"] == ["kafka-cluster:Connect"]
    assert query["X-Amz-Credential"][0].startswith("testing/")
    assert time.time() < expires < time.time() + 3600


def test_plain_clusters_need_no_sign_in_and_msk_iam_needs_a_region() -> None:
    config = client_config("127.0.0.1:9092", "none", None)
    assert "security.protocol" not in config and config["enable.auto.commit"] is False
    assert config["allow.auto.create.topics"] is False  # a replay never creates a topic
    with pytest.raises(ClusterError, match="needs a region"):
        client_config("b-1.example:9098", "msk-iam", None)


def test_the_kinesis_sample_names_one_shard_range() -> None:
    (batch,) = failure_record(aws_document("kinesis-on-failure.json"), "sample").batches
    assert isinstance(batch, KinesisBatch)
    assert (batch.stream_name, batch.shard_id, batch.batch_size) == (
        "mystream",
        "shardId-000000000001",
        500,
    )
    assert batch.start == "49601189658422359378836298521827638475320189012309704722"
    assert batch.problem is None
    assert batch.label.startswith("Kinesis mystream shardId-000000000001 sequence 4960")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"shardId": ""}, "KinesisBatchInfo lacks shardId"),
        ({"endSequenceNumber": "1"}, "run backwards"),
        ({"startSequenceNumber": "x"}, "are not numbers"),
        ({"streamArn": "arn:aws:dynamodb:us-east-2:1:table/t/stream/s"}, "not a Kinesis stream"),
    ],
)
def test_a_broken_kinesis_record_is_kept_with_its_reason(
    change: dict[str, str], problem: str
) -> None:
    document = copy.deepcopy(aws_document("kinesis-on-failure.json"))
    document["KinesisBatchInfo"].update(change)
    (batch,) = failure_record(document, "origin").batches
    assert batch.problem is not None and problem in batch.problem
