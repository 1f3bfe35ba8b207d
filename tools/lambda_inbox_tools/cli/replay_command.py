"""`kafka-replay`: replay what a Kafka event source gave up on (`lambda_inbox_tools.kafka_replay`),
with progress, a dry run, filters, and a clean stop on SIGINT or SIGTERM."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..aws import UsageProblem, resolve_queue
from ..kafka_replay import Auth, ClusterReader, KafkaReplay, ReplayReport
from .common import (
    EndpointOption,
    JsonOption,
    RegionOption,
    command,
    interrupt_on_signals,
    session,
)
from .render import Output


@command(
    name="kafka-replay",
    epilog="Examples:\n\n"
    "  lambda-inbox kafka-replay --from payment-msk-failures --to payment-replay \\\n"
    "      --bootstrap-servers b-1.payments.kafka.us-east-1.amazonaws.com:9098 --auth msk-iam\n"
    "  lambda-inbox kafka-replay --from s3://payment-failures/msk/ --to payment-replay\n"
    "  lambda-inbox kafka-replay --from payment-msk-failures --to payment-replay \\\n"
    "      --bootstrap-servers 127.0.0.1:9092 --topic payments --partition 3 --dry-run\n\n"
    "An SQS on-failure destination holds offsets only: the records are read again from the "
    "cluster (--bootstrap-servers), then sent to --to with their bytes, key, headers and "
    "coordinates, and the failure record is deleted once its whole batch is sent. An S3 "
    "destination holds the records; its objects are left in place. Safe to interrupt and rerun: "
    "the consumer's inbox makes a record that committed before a no-op.",
)
def kafka_replay(
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
        typer.Option("--to", metavar="QUEUE", help="Queue feeding the consumer (URL, name, ARN)."),
    ],
    bootstrap_servers: Annotated[
        str | None,
        typer.Option(
            "--bootstrap-servers",
            metavar="HOST:PORT",
            help="The cluster to read the offsets from (needed for an SQS destination).",
        ),
    ] = None,
    auth: Annotated[
        str,
        typer.Option("--auth", metavar="none|msk-iam", help="How to sign in to the cluster."),
    ] = "none",
    topic: Annotated[
        list[str] | None,
        typer.Option("--topic", metavar="TOPIC", help="Only batches of TOPIC; repeat for more."),
    ] = None,
    partition: Annotated[
        list[int] | None,
        typer.Option("--partition", metavar="N", help="Only batches of partition N; repeat."),
    ] = None,
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
    """Replay Kafka batches an event source gave up on into a queue feeding the consumer."""
    if auth not in ("none", "msk-iam"):
        raise typer.BadParameter("none or msk-iam", param_hint="--auth")
    cluster_auth: Auth = "msk-iam" if auth == "msk-iam" else "none"
    with session(json_output=json_output, endpoint_url=endpoint_url, region=region) as (out, aws):
        sqs = aws.sqs()
        to_queue = resolve_queue(sqs, destination, option="--to", where=aws.where("sqs"))
        region_name = sqs.meta.region_name

        def reader() -> ClusterReader:
            if not bootstrap_servers:
                raise UsageProblem(
                    "the failure records hold offsets only: pass --bootstrap-servers"
                )
            return ClusterReader(bootstrap_servers, auth=cluster_auth, region=region_name)

        with interrupt_on_signals() as stop:
            stop.graceful = True
            replay = KafkaReplay(
                sqs,
                to_queue.url,
                reader=reader,
                topics=topic or (),
                partitions=partition or (),
                dry_run=dry_run,
                stop=stop,
                on_progress=lambda report, line: out.note(line),
            )
            if source.startswith("s3://"):
                bucket, _, prefix = source.removeprefix("s3://").partition("/")
                if not bucket:
                    raise UsageProblem("--from s3://BUCKET/PREFIX needs a bucket")
                out.note(f"replaying s3://{bucket}/{prefix} -> {to_queue.name}")
                replay.from_bucket(aws.s3(), bucket, prefix)
            else:
                from_queue = resolve_queue(sqs, source, option="--from", where=aws.where("sqs"))
                out.note(f"replaying {from_queue.name} -> {to_queue.name}")
                replay.from_queue(from_queue.url, visibility_timeout=visibility_timeout)
        _summary(out, replay.report)
        if not replay.report.ok:
            raise typer.Exit(1)


def _summary(out: Output, report: ReplayReport) -> None:
    for error in report.errors:
        out.warn(error)
    for label, offsets in report.missing.items():
        shown = ", ".join(str(o) for o in offsets[:10]) + (" ..." if len(offsets) > 10 else "")
        out.warn(
            f"{label}: {len(offsets)} offsets not in the cluster ({shown}): deleted by retention "
            "or compaction, or beyond the partition's end; its failure record is kept"
        )
    if report.interrupted:
        out.warn("interrupted: the failure records not replayed are still there; run it again")
    if out.json_mode:
        document: dict[str, Any] = report.document()
        out.emit(document)
        return
    sent = f"would send {report.would_send}" if report.dry_run else f"sent {report.sent}"
    out.out.print(
        f"{report.batches} failed batches: {report.replayed} replayed, {report.incomplete} "
        f"with offsets missing, {report.filtered} filtered out; {sent} records"
    )
