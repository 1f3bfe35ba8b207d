"""`lambda-inbox replay` from on-failure records in AWS's documented shapes to committed effects:
librdkafka's mock cluster holds the Kafka records, DynamoDB Local the inbox and a table with a
stream of outbox items, a moto server the destinations (SQS, S3) and the target queues. Every
operator mistake of the runbook ends in one line and an exit status, and keeps what it could
not replay."""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devkit.app_state import AppState
from devkit.aws_documents import aws_document
from devkit.events import (
    PAYMENT_REPLAY_QUEUE_ARN,
    kafka_event,
    kafka_record,
    outbox_image,
    sqs_event,
    sqs_record_from,
)
from devkit.handlers import load_function
from devkit.paths import FUNCTIONS_DIR
from devkit.payloads import payment
from devkit.tables import create_domain_table
from lambda_inbox_tools.local.backends import kafka_mock_cluster
from lambda_inbox_tools.replay import Clusters, Replay
from lambda_inbox_tools.replay import cluster as cluster_module
from lambda_inbox_tools.replay.cluster import ClusterReader
from lambda_inbox_tools.services.offline import REGION
from lambda_inbox_tools.services.queues import create_queue, queue_depth, receive_all
from lambda_inbox_tools.testing.values import avro_value, protobuf_value
from tests.cli_support import Cli

confluent_kafka = pytest.importorskip("confluent_kafka")

AVSC = FUNCTIONS_DIR / "payment_events" / "schemas" / "payment_captured.avsc"
TOPIC = "payments-held-eu"  # hyphens: AWS names partitions "<topic>-<partition>"

#: The attribute the relay names a message by: a wire contract (docs/concepts.md, "The outbox").
OUTBOX_MESSAGE_ID = "outbox-message-id"


@pytest.fixture
def cluster() -> Iterator[str]:
    with kafka_mock_cluster() as bootstrap:
        yield bootstrap


def produce(bootstrap: str, values: list[bytes], partition: int, topic: str = TOPIC) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value=value, partition=partition, key=b"k")
    assert producer.flush(10) == 0


def kafka_failure(ranges: dict[str, tuple[Any, Any]], bootstrap: str | None) -> str:
    """AWS's SQS/SNS on-failure record (tests/fixtures/aws/) naming `ranges` of `bootstrap`."""
    document = copy.deepcopy(aws_document("kafka-on-failure-sqs-retries-exhausted.json"))
    info = document["KafkaBatchInfo"]
    info["recordsInfo"] = {
        key: {
            "firstRecordOffset": str(first),
            "lastRecordOffset": str(last),
            "firstRecordTimestamp": "2026-11-26T01:00:00.000Z",
            "lastRecordTimestamp": "2026-11-26T01:00:01.000Z",
        }
        for key, (first, last) in ranges.items()
    }
    if bootstrap is None:
        del info["bootstrapServers"]
    else:
        info["bootstrapServers"] = bootstrap
    return json.dumps(document)


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


def visible(sqs: Any, url: str) -> int:
    return queue_depth(sqs, url)


def test_aws_kafka_records_are_replayed_from_the_cluster_they_name_interrupted_and_rerun(
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
    # Offsets 0 and 1 of partition 0 committed before the event source gave up on the batch.
    reader = ClusterReader(cluster)
    early = reader.read(TOPIC, 0, 0, 1).records
    reader.close()
    assert module.handler(kafka_event(early), None) == {"batchItemFailures": []}
    # One record naming both partitions (as AWS writes a batch), and one naming partition 1 alone.
    both = {f"{TOPIC}-0": (0, 3), f"{TOPIC}-1": (0, 1)}
    sqs.send_message(QueueUrl=failures, MessageBody=kafka_failure(both, cluster))
    sqs.send_message(QueueUrl=failures, MessageBody=kafka_failure({f"{TOPIC}-1": (2, 3)}, cluster))

    # The first run stops after its first failure record (as Ctrl-C would between two).
    stop = threading.Event()
    first_run = Replay(
        sqs, replay_queue, clusters=Clusters(None), stop=stop, on_progress=lambda line: stop.set()
    )
    first_run.from_queue(failures, visibility_timeout=30, wait=0)
    report = first_run.report
    assert report.interrupted and report.received == 2 and report.untouched == 1
    assert report.sent in (6, 2) and not report.ok
    assert visible(sqs, failures) == 1  # the other one, visible again at once

    cli = Cli(capsys, AWS_ENDPOINT_URL_SQS=moto_server_endpoint)
    dry = cli("replay", "--from", failures, "--to", replay_queue, "--dry-run", "--json")
    assert dry.code == 0, dry.err
    assert dry.json()["would_send"] == 8 - report.sent
    # The rerun, through the command line, with the cluster the record names and then the alias
    # with --bootstrap-servers: replays what is left and deletes it.
    rerun = cli("kafka-replay", "--from", failures, "--to", replay_queue,
                "--bootstrap-servers", cluster, "--json")  # fmt: skip
    assert rerun.code == 0, rerun.err
    assert (rerun.json()["received"], rerun.json()["replayed"]) == (1, 1)
    assert receive_all(sqs, failures) == []

    assert deliver_replay_queue(aws, module, replay_queue) == {"batchItemFailures": []}
    for customer in ("cust-0", "cust-1", "cust-2"):
        mine = [b for b in bodies if b["customer_id"] == customer]
        assert aws.balance(customer) == (sum(b["amount_cents"] for b in mine), len(mine))
    outcomes = {r["message_key"]: r["status"] for r in aws.inbox_records().values()}
    assert outcomes == {b["event_id"]: "COMPLETED" for b in bodies}
    aws.assert_dlq_empty()

    again = cli("replay", "--from", failures, "--to", replay_queue)
    assert again.code == 0 and "0 failure records received" in again.out


def test_an_s3_destination_replays_the_records_it_kept(
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
        document = aws_document("kafka-on-failure-s3.json") | {
            "payload": json.dumps(kafka_event(batch))
        }
        s3.put_object(Bucket=bucket, Key=f"aws/lambda/{name}", Body=json.dumps(document).encode())
    s3.put_object(Bucket=bucket, Key="aws/lambda/garbage.json", Body=b"not json")

    env = {
        "AWS_ENDPOINT_URL_SQS": moto_server_endpoint,
        "AWS_ENDPOINT_URL_S3": moto_server_endpoint,
    }
    run = Cli(capsys, **env)(
        "replay", "--from", f"s3://{bucket}/aws/lambda/", "--to", replay_queue,
        "--topic", "payments", "--json",
    )  # fmt: skip

    report = run.json()
    assert run.code == 1  # the object that is no failure record is reported
    assert (report["received"], report["sent"], report["filtered_out"]) == (3, 3, 1)
    assert [k["reason"] for k in report["kept"] if not k["filtered"]] == ["not JSON"]
    assert deliver_replay_queue(aws, module, replay_queue) == {"batchItemFailures": []}
    assert aws.balance("cust-s3") == (30, 3)
    assert aws.balance("cust-other") == (0, 0)
    assert len(s3.list_objects_v2(Bucket=bucket)["Contents"]) == 3  # S3 objects stay


@pytest.mark.parametrize(
    ("record", "says"),
    [
        (lambda c: kafka_failure({f"{TOPIC}-0": (3, 1)}, c), "offsets 3..1 run backwards"),
        (lambda c: kafka_failure({"no-such-topic-0": (0, 1)}, c), "no topic 'no-such-topic'"),
        (lambda c: kafka_failure({f"{TOPIC}-0": (0, 9)}, c), "7 offsets not in the cluster"),
        (lambda c: kafka_failure({f"{TOPIC}-0": (0, 1)}, None), "pass --bootstrap-servers"),
        (
            lambda c: '{"requestContext": {}}',
            "no KafkaBatchInfo, DDBStreamBatchInfo or KinesisBatchInfo",
        ),
    ],
    ids=["backwards", "unknown-topic", "missing-offsets", "no-cluster", "not-a-record"],
)
def test_a_record_that_cannot_be_replayed_whole_is_kept_and_reported(
    cluster: str,
    moto_server_endpoint: str,
    capsys: pytest.CaptureFixture[str],
    record: Any,
    says: str,
    aws: AppState,
) -> None:
    produce(cluster, [b'{"n": 1}', b'{"n": 2}', b'{"n": 3}'], partition=0)
    failures = create_queue(aws.sqs, f"f-{uuid.uuid4().hex[:8]}")
    target = create_queue(aws.sqs, f"t-{uuid.uuid4().hex[:8]}")
    aws.sqs.send_message(QueueUrl=failures, MessageBody=record(cluster))

    run = Cli(capsys, AWS_ENDPOINT_URL_SQS=moto_server_endpoint)(
        "replay", "--from", failures, "--to", target
    )

    assert run.code == 1
    assert says in run.err
    assert "1 failure record received: 0 replayed, 1 kept" in run.out
    assert visible(aws.sqs, failures) == 1  # kept, and visible at once for the next run


def test_an_unreachable_cluster_is_one_line_and_exit_1_before_anything_is_received(
    moto_server_endpoint: str,
    capsys: pytest.CaptureFixture[str],
    aws: AppState,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cluster_module, "CHECK_SECONDS", 2.0)  # 5 s by default
    checks: list[str] = []
    real_check = cluster_module.ClusterReader.check

    def counted_check(reader: cluster_module.ClusterReader, timeout: float | None = None) -> Any:
        checks.append(reader.bootstrap)  # the real check runs: this only counts it
        return real_check(reader, timeout)

    monkeypatch.setattr(cluster_module.ClusterReader, "check", counted_check)
    failures = create_queue(aws.sqs, f"f-{uuid.uuid4().hex[:8]}")
    target = create_queue(aws.sqs, f"t-{uuid.uuid4().hex[:8]}")
    for partition in range(3):  # three records naming the same cluster: one wait, not three
        aws.sqs.send_message(
            QueueUrl=failures,
            MessageBody=kafka_failure({f"{TOPIC}-{partition}": (0, 1)}, "127.0.0.1:9"),
        )
    cli = Cli(capsys, AWS_ENDPOINT_URL_SQS=moto_server_endpoint)
    for extra in ((), ("--bootstrap-servers", "127.0.0.1:9")):
        checks.clear()
        run = cli("replay", "--from", failures, "--to", target, *extra)
        assert run.code == 1
        assert checks == ["127.0.0.1:9"]  # checked once, before anything was received
        assert run.err.count("\n") == 1, run.err
        assert "cannot reach the Kafka cluster at 127.0.0.1:9 within 2 s" in run.err
        assert visible(aws.sqs, failures) == 3  # nothing was hidden


def test_records_in_flight_elsewhere_are_counted_and_fail_the_run(
    moto_server_endpoint: str, capsys: pytest.CaptureFixture[str], aws: AppState
) -> None:
    failures = create_queue(aws.sqs, f"f-{uuid.uuid4().hex[:8]}")
    target = create_queue(aws.sqs, f"t-{uuid.uuid4().hex[:8]}")
    aws.sqs.send_message(QueueUrl=failures, MessageBody=kafka_failure({f"{TOPIC}-0": (0, 1)}, None))
    # Another reader (an earlier run stopped hard, a console) holds it.
    assert aws.sqs.receive_message(QueueUrl=failures, VisibilityTimeout=60)["Messages"]

    run = Cli(capsys, AWS_ENDPOINT_URL_SQS=moto_server_endpoint)(
        "replay", "--from", failures, "--to", target
    )

    assert run.code == 1
    assert "0 failure records received" in run.out and "1 more in flight elsewhere" in run.out
    assert "1 failure record in flight" in " ".join(run.err.split())


# ---------------------------------------------------------------------------- streams


def outbox_table(dynamodb: Any) -> tuple[str, str]:
    table = f"outbox-{uuid.uuid4().hex[:8]}"
    create_domain_table(dynamodb, table, stream=True)
    return table, dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]


def put_outbox(dynamodb: Any, table: str, n: int) -> str:
    """An outbox item as a handler's `UnitOfWork.outbox` writes it (its own transaction aside)."""
    body = {"event_id": f"ntf-{n}", "customer_id": "c-1", "order_id": f"o-{n}", "template": "t"}
    item = outbox_image(f"ntf-{n}", "notifications", body, ttl_seconds=3600)
    dynamodb.put_item(TableName=table, Item=item)
    return f"ntf-{n}"


def stream_failure(dynamodb: Any, stream_arn: str, arrivals: tuple[str, str] | None) -> str:
    """AWS's DDBStreamBatchInfo for the whole shard, its ARN as the local stack writes it (the
    template's region and account, DynamoDB Local's own label)."""
    streams = boto3.client("dynamodbstreams", endpoint_url=dynamodb.meta.endpoint_url)
    shard = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"][0]
    iterator = streams.get_shard_iterator(
        StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator)["Records"]
    document = copy.deepcopy(aws_document("dynamodb-streams-on-failure.json"))
    info = document["DDBStreamBatchInfo"]
    table, label = stream_arn.split(":table/", 1)[1].split("/stream/")
    info |= {
        "shardId": shard["ShardId"],
        "startSequenceNumber": records[0]["dynamodb"]["SequenceNumber"],
        "endSequenceNumber": records[-1]["dynamodb"]["SequenceNumber"],
        "batchSize": len(records),
        "streamArn": f"arn:aws:dynamodb:{REGION}:123456789012:table/{table}/stream/{label}",
    }
    if arrivals is None:
        del info["approximateArrivalOfFirstRecord"], info["approximateArrivalOfLastRecord"]
    else:
        info["approximateArrivalOfFirstRecord"], info["approximateArrivalOfLastRecord"] = arrivals
    return json.dumps(document)


def test_an_outbox_relays_stream_failure_is_replayed_from_the_stream_or_else_the_table(
    dynamodb_local_endpoint: str,
    moto_server_endpoint: str,
    capsys: pytest.CaptureFixture[str],
    aws: AppState,
) -> None:
    dynamodb = boto3.client("dynamodb", endpoint_url=dynamodb_local_endpoint)
    table, stream_arn = outbox_table(dynamodb)
    now = time.time()
    sent = [put_outbox(dynamodb, table, n) for n in range(3)]
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "ORDER#1"}, "sk": {"S": "SHIPMENT"}})
    failures = create_queue(aws.sqs, f"relay-failures-{uuid.uuid4().hex[:8]}")
    notifications = create_queue(aws.sqs, f"notifications-{uuid.uuid4().hex[:8]}")
    window = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),) * 2
    aws.sqs.send_message(
        QueueUrl=failures, MessageBody=stream_failure(dynamodb, stream_arn, window)
    )
    cli = Cli(
        capsys,
        AWS_ENDPOINT_URL_SQS=moto_server_endpoint,
        AWS_ENDPOINT_URL_DYNAMODB=dynamodb_local_endpoint,
        AWS_ENDPOINT_URL_DYNAMODB_STREAMS=dynamodb_local_endpoint,
    )

    run = cli("replay", "--from", failures, "--to", notifications)

    assert run.code == 0, run.err
    assert (
        "sent 3 outbox items" in run.err and "from the stream, named for notifications" in run.err
    )
    relayed = receive_all(aws.sqs, notifications, delete=True)
    ids = sorted(m["MessageAttributes"][OUTBOX_MESSAGE_ID]["StringValue"] for m in relayed)
    assert ids == sent
    assert visible(aws.sqs, failures) == 0

    # The stream no longer holds the range (another shard, as after 24 hours): the table does.
    gone = json.loads(stream_failure(dynamodb, stream_arn, window))
    gone["DDBStreamBatchInfo"]["shardId"] = "shardId-00000000000000000000-00000000"
    aws.sqs.send_message(QueueUrl=failures, MessageBody=json.dumps(gone))
    run = cli("replay", "--from", failures, "--to", notifications)
    assert run.code == 0, run.err
    assert "sent 3 outbox items" in run.err and "from the table" in run.err
    assert len(receive_all(aws.sqs, notifications, delete=True)) == 3

    # Gone from the stream, and no arrival times to find them in the table: kept.
    gone["DDBStreamBatchInfo"].pop("approximateArrivalOfFirstRecord")
    aws.sqs.send_message(QueueUrl=failures, MessageBody=json.dumps(gone))
    run = cli("replay", "--from", failures, "--to", notifications)
    assert run.code == 1 and "no arrival times" in run.err
    assert visible(aws.sqs, failures) == 1


def test_a_stream_consumers_given_up_records_are_replayed_to_its_queue_and_count_once(
    dynamodb_local_endpoint: str,
    moto_server_endpoint: str,
    capsys: pytest.CaptureFixture[str],
    aws: AppState,
) -> None:
    """`--stream-records`: the records themselves (not outbox items), for an inbox consumer of
    the stream; the SQS adapter reads them as the stream consumer reads the records, and their
    eventID keys them as their first delivery did."""
    dynamodb = boto3.client("dynamodb", endpoint_url=dynamodb_local_endpoint)
    table, stream_arn = outbox_table(dynamodb)  # any table with a stream
    for n, status in enumerate(("PLACED", "PLACED", "PAID")):
        dynamodb.put_item(
            TableName=table,
            Item={"pk": {"S": f"ORDER#{n % 2}"}, "sk": {"S": "ORDER"}, "status": {"S": status}},
        )
    failures = create_queue(aws.sqs, f"projection-failures-{uuid.uuid4().hex[:8]}")
    replays = create_queue(aws.sqs, f"projection-replay-{uuid.uuid4().hex[:8]}")
    failure = stream_failure(dynamodb, stream_arn, None)
    cli = Cli(
        capsys,
        AWS_ENDPOINT_URL_SQS=moto_server_endpoint,
        AWS_ENDPOINT_URL_DYNAMODB=dynamodb_local_endpoint,
        AWS_ENDPOINT_URL_DYNAMODB_STREAMS=dynamodb_local_endpoint,
    )
    seen: list[tuple[str, str]] = []

    def project(change: dict[str, Any], uow: Any) -> None:
        seen.append((change["eventName"], change["NewImage"]["status"]))
        uow.update(
            aws.domain,
            {"pk": "STATUS", "sk": change["NewImage"]["status"]},
            "ADD orders :one",
            values={":one": 1},
        )

    consumer = aws.consumer("projection", model=dict, decide=project)  # keyed by eventID
    for _ in range(2):  # the same failure record replayed twice: counted once
        aws.sqs.send_message(QueueUrl=failures, MessageBody=failure)
        run = cli("replay", "--from", failures, "--to", replays, "--stream-records")
        assert run.code == 0, run.err
        assert "sent 3 records" in run.err
        messages = receive_all(aws.sqs, replays, delete=True)
        assert {m["MessageAttributes"]["inbox-error-code"]["StringValue"] for m in messages} == {
            "dynamodb_stream_replay"
        }
        event = sqs_event(*(sqs_record_from(m, arn="arn:aws:sqs:us-east-1:1:q") for m in messages))
        assert consumer.handle(event, None) == {"batchItemFailures": []}
    assert sorted(seen) == [("INSERT", "PLACED"), ("INSERT", "PLACED"), ("MODIFY", "PAID")]
    counts = {
        item["sk"]: int(item["orders"]) for item in aws.domain_items() if item["pk"] == "STATUS"
    }
    assert counts == {"PLACED": 2, "PAID": 1}


def test_an_outbox_relays_failure_replays_to_a_fifo_topic_or_a_bus_by_its_arn(
    dynamodb_local_endpoint: str,
    moto_server_endpoint: str,
    capsys: pytest.CaptureFixture[str],
    aws: AppState,
) -> None:
    """Outbox items of a relay that publishes to a topic or a bus replay there, as the relay
    sends them (the id as deduplication id and attribute; in `resources` on a bus); a stream
    batch replayed as records cannot go to a topic, and is kept with one line."""
    dynamodb = boto3.client("dynamodb", endpoint_url=dynamodb_local_endpoint)
    table, stream_arn = outbox_table(dynamodb)
    sent = [put_outbox(dynamodb, table, n) for n in range(3)]
    sns: Any = boto3.client("sns", endpoint_url=moto_server_endpoint, region_name=REGION)
    events: Any = boto3.client("events", endpoint_url=moto_server_endpoint, region_name=REGION)
    suffix = uuid.uuid4().hex[:8]
    topic = sns.create_topic(Name=f"shipments-{suffix}.fifo", Attributes={"FifoTopic": "true"})
    subscribed = create_queue(aws.sqs, f"shipments-{suffix}.fifo")
    subscribed_arn = aws.sqs.get_queue_attributes(QueueUrl=subscribed, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    sns.subscribe(
        TopicArn=topic["TopicArn"],
        Protocol="sqs",
        Endpoint=subscribed_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    bus = events.create_event_bus(Name=f"orders-{suffix}")["EventBusArn"]
    routed = create_queue(aws.sqs, f"orders-{suffix}")
    events.put_rule(Name="all", EventBusName=bus, EventPattern='{"source": [{"prefix": ""}]}')
    events.put_targets(
        Rule="all",
        EventBusName=bus,
        Targets=[
            {
                "Id": "q",
                "Arn": aws.sqs.get_queue_attributes(QueueUrl=routed, AttributeNames=["QueueArn"])[
                    "Attributes"
                ]["QueueArn"],
            }
        ],
    )
    failures = create_queue(aws.sqs, f"relay-failures-{suffix}")
    cli = Cli(
        capsys,
        AWS_ENDPOINT_URL_SQS=moto_server_endpoint,
        AWS_ENDPOINT_URL_SNS=moto_server_endpoint,
        AWS_ENDPOINT_URL_EVENTBRIDGE=moto_server_endpoint,
        AWS_ENDPOINT_URL_DYNAMODB=dynamodb_local_endpoint,
        AWS_ENDPOINT_URL_DYNAMODB_STREAMS=dynamodb_local_endpoint,
    )
    failure = stream_failure(dynamodb, stream_arn, None)

    aws.sqs.send_message(QueueUrl=failures, MessageBody=failure)
    run = cli("replay", "--from", failures, "--to", topic["TopicArn"])
    assert run.code == 0, run.err
    assert "sent 3 outbox items" in run.err
    relayed = receive_all(aws.sqs, subscribed, delete=True)
    assert sorted(m["Attributes"]["MessageDeduplicationId"] for m in relayed) == sent
    assert sorted(m["MessageAttributes"][OUTBOX_MESSAGE_ID]["StringValue"] for m in relayed) == sent

    aws.sqs.send_message(QueueUrl=failures, MessageBody=failure)
    run = cli("replay", "--from", failures, "--to", bus)
    assert run.code == 0, run.err
    routed_events = [json.loads(m["Body"]) for m in receive_all(aws.sqs, routed, delete=True)]
    assert sorted(e["resources"][0] for e in routed_events) == [
        f"outbox-message-id:{message_id}" for message_id in sent
    ]

    aws.sqs.send_message(QueueUrl=failures, MessageBody=failure)
    run = cli("replay", "--from", failures, "--to", topic["TopicArn"], "--stream-records")
    assert run.code == 1
    assert "only outbox items can be replayed to an sns destination" in " ".join(run.err.split())
    assert visible(aws.sqs, failures) == 1
