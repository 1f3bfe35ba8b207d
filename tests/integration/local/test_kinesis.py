"""The local stack's Kinesis emulation on the moto server, driving an inbox consumer on DynamoDB
Local: records put on the stream are credited once, in order per shard; a record that fails is
retried from its sequence number; poison goes to the consumer's dead-letter queue and the shard
goes on; a batch that keeps failing is given up to the on-failure queue as `KinesisBatchInfo`,
in the shape of AWS's sample, and `lambda-inbox replay` reads it back from the stream into a
queue that feeds the same consumer, which credits it once the fix is in."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devkit.aws_documents import aws_document, shape_problems
from lambda_inbox_tools.local.stack import LocalStack, running_stack
from lambda_inbox_tools.local.template import read_stack
from lambda_inbox_tools.replay import Clusters, KinesisReader, Replay
from lambda_inbox_tools.services.items import scan_plain

TEMPLATE = Path(__file__).resolve().parent / "kinesis_app" / "template.yaml"


def wait_for(condition: Callable[[], bool], poller: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out: {poller.stats}"
        time.sleep(0.1)


def put(stack: LocalStack, event_id: str, account: str, amount: int) -> str:
    body = {"event_id": event_id, "account": account, "amount": amount}
    answer = stack.kinesis.put_record(
        StreamName=stack.stack.kinesis_streams[0].name,
        Data=json.dumps(body).encode(),
        PartitionKey="all",  # one shard: the order of the puts is the order of the records
    )
    return str(answer["SequenceNumber"])


def balances(stack: LocalStack) -> dict[str, tuple[int, int]]:
    items = scan_plain(stack.dynamodb, stack.stack.table("LedgerTable").name)
    return {i["pk"]: (int(i["balance"]), int(i["deposits"])) for i in items}


def test_the_template_declares_a_kinesis_stream_and_its_trigger() -> None:
    stack = read_stack(TEMPLATE, stack_name="kinesis-read")
    (stream,) = stack.kinesis_streams
    assert (stream.name, stream.shard_count) == ("kinesis-read-DepositsStream", 2)
    assert stream.arn == "arn:aws:kinesis:us-east-1:123456789012:stream/kinesis-read-DepositsStream"
    deposits, replays = stack.function("DepositFunction").events
    assert deposits.stream_name == stream.name  # type: ignore[union-attr]
    assert replays.queue_arn == stack.queue("ReplayQueue").arn  # type: ignore[union-attr]
    assert stack.skipped == []


def test_kinesis_records_drive_an_inbox_consumer(
    dynamodb_local_endpoint: str, moto_server_endpoint: str, tmp_path: Path
) -> None:
    marker = tmp_path / "fixed"
    with running_stack(
        TEMPLATE,
        parameters={"FixedMarker": str(marker)},
        dynamodb_endpoint=dynamodb_local_endpoint,
        sqs_endpoint=moto_server_endpoint,
        stack_name=f"kinesis-{time.monotonic_ns() % 10**8}",
        say=lambda _: None,
    ) as stack:
        assert stack.skipped == []
        (poller,) = stack.stream_pollers
        stack.start()
        for n in range(6):
            put(stack, f"d-{n}", "a", 10)
        put(stack, "d-6", "a", 10)  # a producer retry of d-6 under a new sequence number
        put(stack, "d-6", "a", 10)
        put(stack, "d-flaky", "flaky", 5)  # fails once: retried from its sequence number
        put(stack, "d-poison", "a", -1)  # invalid: dead-lettered, the shard goes on
        put(stack, "d-7", "b", 7)
        broken = put(stack, "d-broken", "broken", 1)  # never: given up after 2 retries
        wait_for(lambda: poller.stats.given_up_batches == 1, poller)
        given_up_url = stack.stack.queue("GivenUpQueue").url
        given_up = stack.sqs.receive_message(
            QueueUrl=given_up_url, VisibilityTimeout=0, WaitTimeSeconds=5
        )
        record = json.loads(given_up["Messages"][0]["Body"])

        marker.touch()  # the fix deployed; then the replay
        replay = Replay(
            stack.sqs,
            stack.stack.queue("ReplayQueue").url,
            clusters=Clusters(None),
            kinesis=KinesisReader(stack.kinesis),
        )
        replay.from_queue(given_up_url)
        assert (replay.report.replayed, replay.report.sent, replay.report.kept) == (1, 1, [])
        credited = {"ACCOUNT#a": (70, 7), "ACCOUNT#flaky": (5, 1), "ACCOUNT#b": (7, 1)}
        wait_for(lambda: balances(stack) == credited | {"ACCOUNT#broken": (1, 1)}, poller)
        replay.from_queue(given_up_url)  # nothing left: the failure record was deleted
        assert replay.report.received == 1
        stack.stop()

        assert balances(stack) == credited | {"ACCOUNT#broken": (1, 1)}
        poison = stack.sqs.receive_message(
            QueueUrl=stack.stack.queue("PoisonQueue").url,
            MessageAttributeNames=["All"],
            WaitTimeSeconds=1,
        )["Messages"]
        assert [json.loads(m["Body"])["event_id"] for m in poison] == ["d-poison"]
        coordinates = poison[0]["MessageAttributes"]
        shard = coordinates["kinesis-shard-id"]["StringValue"]
        assert shard in {"shardId-000000000000", "shardId-000000000001"}
        assert coordinates["kinesis-partition-key"]["StringValue"] == "all"

        assert shape_problems(aws_document("kinesis-on-failure.json"), record) == []
        info: dict[str, Any] = record["KinesisBatchInfo"]
        assert (info["startSequenceNumber"], info["endSequenceNumber"]) == (broken, broken)
        assert (info["shardId"], info["batchSize"]) == (shard, 1)
        assert info["streamArn"] == stack.stack.kinesis_streams[0].arn
        assert poller.stats.failed_invocations == 0  # failures were reported, not raised


def test_records_past_their_maximum_age_are_discarded_and_the_shard_goes_on(
    dynamodb_local_endpoint: str, moto_server_endpoint: str
) -> None:
    """Infinite retries, a maximum age of 60 s scaled to 3 s: the broken deposit is retried
    until it is too old, then given up as `RecordAgeExceeded`; the next one is credited."""
    with running_stack(
        TEMPLATE,
        parameters={"RetryAttempts": "-1", "MaxRecordAge": "60"},
        scale=0.05,
        dynamodb_endpoint=dynamodb_local_endpoint,
        sqs_endpoint=moto_server_endpoint,
        stack_name=f"kinesis-age-{time.monotonic_ns() % 10**8}",
        say=lambda _: None,
    ) as stack:
        (poller,) = stack.stream_pollers
        stack.start()
        broken = put(stack, "d-broken", "broken", 1)
        wait_for(lambda: poller.stats.given_up_batches == 1, poller)
        put(stack, "d-1", "a", 10)
        wait_for(lambda: balances(stack) == {"ACCOUNT#a": (10, 1)}, poller)
        stack.stop()
        assert poller.stats.failed_invocations == 0 and poller.stats.retried_records >= 2
        (message,) = stack.sqs.receive_message(
            QueueUrl=stack.stack.queue("GivenUpQueue").url, WaitTimeSeconds=1
        )["Messages"]
        record = json.loads(message["Body"])
        assert shape_problems(aws_document("kinesis-on-failure.json"), record) == []
        assert record["requestContext"]["condition"] == "RecordAgeExceeded"
        info = record["KinesisBatchInfo"]
        assert (info["startSequenceNumber"], info["endSequenceNumber"]) == (broken, broken)
