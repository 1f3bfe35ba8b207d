"""`replay` (alias `kafka-replay`): republish what an event source mapping gave up on
(`lambda_inbox_tools.replay`), with progress, a dry run, filters, and a clean stop on SIGINT or
SIGTERM."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from lambda_inbox.wire import Sender, destination_of, sender_for

from ..aws import Aws, Failure, Queue, UsageProblem, resolve_queue
from ..replay import (
    Auth,
    ClusterError,
    Clusters,
    KinesisReader,
    Replay,
    ReplayReport,
    StreamReader,
)
from ..replay.report import counted
from .common import (
    EndpointOption,
    JsonOption,
    RegionOption,
    command,
    interrupt_on_signals,
    session,
)
from .render import Output

EPILOG = (
    "Examples:\n\n"
    "  lambda-inbox replay --from payment-msk-failures --to payment-replay --dry-run\n"
    "  lambda-inbox replay --from payment-msk-failures --to payment-replay --auth msk-iam\n"
    "  lambda-inbox replay --from payment-msk-failures --to payment-replay \\\n"
    "      --bootstrap-servers 127.0.0.1:9092 --topic payments --partition 3\n"
    "  lambda-inbox replay --from s3://payment-failures/aws/lambda/ --to payment-replay\n"
    "  lambda-inbox replay --from outbox-relay-failures --to notifications\n"
    "  lambda-inbox replay --from outbox-relay-failures \\\n"
    "      --to arn:aws:sns:eu-west-1:123456789012:shipments.fifo\n"
    "  lambda-inbox replay --from deposit-stream-failures --to deposit-replay\n"
    "  lambda-inbox replay --from tier-failures --to tier-replay --stream-records\n\n"
    "Reads the on-failure records of a Kafka (MSK, self-managed), Kinesis or DynamoDB Streams "
    "event source mapping, as AWS writes them, from an SQS queue or S3 objects. A Kafka record "
    "names offsets per partition and the cluster (its bootstrapServers; --bootstrap-servers "
    "overrides them): the records are read again and sent to --to with their bytes, key, "
    "headers and coordinates. A Kinesis record names a range of a shard: its records are read "
    "again from the stream ($AWS_ENDPOINT_URL_KINESIS) and sent with their data, coordinates "
    "and eventID. A DynamoDB stream record names a range of the stream: the outbox items in it "
    "are read again (from the table when the stream no longer holds them) and sent as the "
    "relay sends them, to a queue, or to an SNS topic or EventBridge bus named by its ARN; with --stream-records, its records are sent instead, for an inbox "
    "consumer of the stream. An SQS failure record is deleted once all it names was sent; one "
    "that cannot be replayed whole is kept and reported. S3 objects stay. Safe to interrupt "
    "and rerun: the consumer's inbox makes what committed before a no-op. Exit status: 0 "
    "everything received was replayed (or filtered out), 1 something was kept or is still in "
    "flight, 2 usage error."
)


def replay(
    source: Annotated[
        str,
        typer.Option(
            "--from",
            metavar="DESTINATION",
            help="The event source's on-failure destination: an SQS queue (URL, name or ARN) "
            "or s3://BUCKET/PREFIX.",
        ),
    ],
    destination: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="DESTINATION",
            help="Queue feeding the consumer (URL, name, ARN); for outbox items also an SNS "
            "topic ARN or an EventBridge bus ARN.",
        ),
    ],
    bootstrap_servers: Annotated[
        str | None,
        typer.Option(
            "--bootstrap-servers",
            metavar="HOST:PORT",
            help="Read Kafka offsets from this cluster instead of the one each record names.",
        ),
    ] = None,
    auth: Annotated[
        str,
        typer.Option("--auth", metavar="none|msk-iam", help="How to sign in to the cluster."),
    ] = "none",
    topic: Annotated[
        list[str] | None,
        typer.Option("--topic", metavar="TOPIC", help="Only Kafka batches of TOPIC; repeat."),
    ] = None,
    partition: Annotated[
        list[int] | None,
        typer.Option("--partition", metavar="N", help="Only Kafka batches of partition N; repeat."),
    ] = None,
    stream_records: Annotated[
        bool,
        typer.Option(
            "--stream-records",
            help="DynamoDB stream batches: replay their records, for an inbox consumer of the "
            "stream (else the outbox items in them, for the relay).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Send and delete nothing; count what would go.")
    ] = False,
    visibility_timeout: Annotated[
        int,
        typer.Option(
            "--visibility-timeout",
            min=5,
            max=43200,
            metavar="SECONDS",
            help="How long a failure record stays hidden while its batch is replayed.",
        ),
    ] = 300,
    endpoint_url: EndpointOption = None,
    region: RegionOption = None,
    json_output: JsonOption = False,
) -> None:
    """Republish what a Kafka, Kinesis or DynamoDB Streams event source gave up on (see the
    epilog)."""
    if auth not in ("none", "msk-iam"):
        raise typer.BadParameter("none or msk-iam", param_hint="--auth")
    cluster_auth: Auth = "msk-iam" if auth == "msk-iam" else "none"
    if bootstrap_servers is not None and not bootstrap_servers.strip():
        raise typer.BadParameter(
            "empty: pass HOST:PORT[,HOST:PORT...]", param_hint="--bootstrap-servers"
        )
    with session(json_output=json_output, endpoint_url=endpoint_url, region=region) as (out, aws):
        sqs = aws.sqs()
        outbox_to = _outbox_destination(aws, destination)
        to_queue = (
            Queue(destination, "")
            if outbox_to is not None
            else resolve_queue(sqs, destination, option="--to", where=aws.where("sqs"))
        )
        to_name = to_queue.name if outbox_to is None else destination
        bucket, prefix = _bucket(source)
        from_queue = (
            None if bucket else resolve_queue(sqs, source, option="--from", where=aws.where("sqs"))
        )
        if bucket:
            _check_bucket(aws, bucket)
        clusters = Clusters(
            bootstrap_servers and bootstrap_servers.strip(),
            auth=cluster_auth,
            region=sqs.meta.region_name,
        )
        with interrupt_on_signals() as stop:
            stop.graceful = True
            run = Replay(
                sqs,
                to_queue.url,
                clusters=clusters,
                streams=StreamReader(aws.streams(), aws.dynamodb()),
                kinesis=KinesisReader(aws.kinesis()),
                stream_records=stream_records,
                topics=topic or (),
                partitions=partition or (),
                dry_run=dry_run,
                stop=stop,
                on_progress=out.note,
                outbox_to=outbox_to,
            )
            try:
                if clusters.override:  # checked before anything is received
                    clusters.reader(clusters.override)
                if from_queue is not None:
                    run.check_queue(from_queue.url)
            except ClusterError as error:
                clusters.close()
                hint = (
                    "" if clusters.override else "; --bootstrap-servers reads it at another address"
                )
                raise Failure(f"{error}{hint}") from None
            if bucket:
                out.note(f"replaying s3://{bucket}/{prefix} -> {to_name}")
                run.from_bucket(aws.s3(), bucket, prefix)
            elif from_queue is not None:
                out.note(f"replaying {from_queue.name} -> {to_name}")
                run.from_queue(from_queue.url, visibility_timeout=visibility_timeout)
        _summary(out, run.report)
        if not run.report.ok:
            raise typer.Exit(1)


command(
    name="replay",
    epilog=EPILOG,
    help="Replay what a Kafka or DynamoDB Streams event source gave up on (alias: kafka-replay).",
)(replay)
command(
    name="kafka-replay",
    epilog=EPILOG,
    help="Alias of replay: replay what a Kafka or DynamoDB Streams event source gave up on.",
)(replay)


def _outbox_destination(aws: Aws, given: str) -> Sender | None:
    """The SNS topic or EventBridge bus `--to` names by its ARN; None for a queue."""
    text = given.strip()
    if not text.startswith("arn:") or text.split(":")[2:3] == ["sqs"]:
        return None
    try:
        destination = destination_of(text)
    except ValueError as error:
        raise UsageProblem(f"--to: {error}") from None
    client = aws.sns() if destination.kind == "sns" else aws.events()
    return sender_for(destination, client)


def _bucket(source: str) -> tuple[str | None, str]:
    if not source.startswith("s3://"):
        return None, ""
    bucket, _, prefix = source.removeprefix("s3://").partition("/")
    if not bucket:
        raise UsageProblem("--from s3://BUCKET/PREFIX needs a bucket")
    return bucket, prefix


def _check_bucket(aws: Aws, bucket: str) -> None:
    from botocore.exceptions import ClientError

    try:
        aws.s3().head_bucket(Bucket=bucket)
    except ClientError as error:
        raise UsageProblem(
            f"--from: no bucket {bucket!r} at {aws.where('s3')} "
            f"({error.response.get('Error', {}).get('Code', '')})"
        ) from error


def _summary(out: Output, report: ReplayReport) -> None:
    for kept in report.problems:
        out.warn(f"kept {kept.origin}: {kept.reason}")
    if report.untouched:
        out.warn(
            f"interrupted: {counted(report.untouched, 'failure record')} received and not looked "
            "at: visible again; run it again"
        )
    if report.in_flight:
        out.warn(
            f"{counted(report.in_flight, 'failure record')} in flight, received by another reader "
            "(an earlier run, a console): back after its visibility timeout; run again then"
        )
    if out.json_mode:
        document: dict[str, Any] = report.document()
        out.emit(document)
        return
    out.out.print(report.summary())
