"""The shell lines printed for a running stack: exports that reach its services, then commands
to send to it, read it, redrive its dead letters and replay what its event sources gave up."""

from __future__ import annotations

from collections.abc import Mapping

from lambda_inbox.store import OPEN_RECORDS_INDEX

from .stack import LocalStack
from .template import FunctionSpec, KafkaEventSpec, KinesisEventSpec, StreamEventSpec, TableSpec


def keep_running_hints(local: LocalStack, samples: Mapping[str, str] | None = None) -> list[str]:
    """The shell lines to talk to the running stack, for any template. DynamoDB and SQS listen
    on different endpoints, so they are exported per service (`AWS_ENDPOINT_URL_DYNAMODB`,
    `AWS_ENDPOINT_URL_SQS`), which lambda-inbox, the SDKs and AWS CLI v2 read. AWS CLI v1 reads
    only the DynamoDB one, so every `aws sqs` line also names its `--endpoint-url`, and
    `lambda-inbox send` needs no AWS CLI at all. `samples`: a message body per queue
    (logical ID) for its `send` lines, else `{}` (a workload's `sample_bodies`)."""
    stack, sqs = local.stack, local.endpoints.sqs
    lines = [
        "export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing",
        "export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1",
        f"export AWS_ENDPOINT_URL_DYNAMODB={local.endpoints.dynamodb}",
        f"export AWS_ENDPOINT_URL_DYNAMODB_STREAMS={local.endpoints.dynamodb}",
        f"export AWS_ENDPOINT_URL_SQS={sqs}",
    ]
    if local.endpoints.kafka_bootstrap:
        lines.append(f"export KAFKA_BOOTSTRAP_SERVERS={local.endpoints.kafka_bootstrap}")
    if stack.kinesis_streams:
        lines.append(f"export AWS_ENDPOINT_URL_KINESIS={sqs}")
    if stack.routes:
        lines.append(f"export AWS_ENDPOINT_URL_SNS={sqs} AWS_ENDPOINT_URL_EVENTBRIDGE={sqs}")
        for sns_topic in stack.routes.topics:
            lines.append(f"lambda-inbox send --sns-topic {sns_topic.arn} --body '{{}}'")
        for rule in stack.routes.rules:
            lines.append(f"lambda-inbox send --event-bus {rule.bus} --body '{{}}'")
    inbox = next((t for t in stack.tables if OPEN_RECORDS_INDEX in _indexes(t)), None)
    if inbox is not None:
        lines.append(f"export INBOX_TABLE={inbox.name}")
    polled = {poller.queue.logical_id for poller in local.sqs_pollers}
    for queue in stack.queues:
        if queue.logical_id not in polled:
            continue
        body = (samples or {}).get(queue.logical_id, "{}")
        lines.append(f"lambda-inbox send --queue {queue.name} --body '{body}'")
        lines.append(
            f"aws sqs send-message --endpoint-url {sqs} --queue-url {queue.url} "
            f"--message-body '{body}'"
        )
    for stream in stack.kinesis_streams:
        lines.append(f"lambda-inbox send --stream {stream.name} --key k-1 --body '{{}}'")
        lines.append(
            f"aws kinesis put-record --endpoint-url {sqs} --stream-name {stream.name} "
            "--partition-key k-1 --cli-binary-format raw-in-base64-out --data '{}'"
        )
    for topic in stack.topics:
        lines.append(
            f"lambda-inbox send --topic {topic} --bootstrap-servers "
            "$KAFKA_BOOTSTRAP_SERVERS --body '{}'"
        )
    lines += [f"aws dynamodb scan --table-name {table.name}" for table in stack.tables]
    if inbox is not None:
        lines += ["lambda-inbox stats", "lambda-inbox failed"]
    lines += [
        f"lambda-inbox redrive --from {dlq.name} --to {source.name} --client-side"
        for dlq, source in stack.redrive_pairs()
    ]
    return lines + replay_hints(local)


def replay_hints(local: LocalStack) -> list[str]:
    """One `lambda-inbox replay` per on-failure destination of a Kafka or stream event source
    that is a queue here: from it, to a queue that feeds the function again (another of its
    SQS event sources, else a queue its environment names), else to a queue the operator picks."""
    lines: list[str] = []
    sources: list[tuple[FunctionSpec, KafkaEventSpec | StreamEventSpec | KinesisEventSpec]] = [
        (p.function, p.event) for p in local.kafka_pollers
    ] + [(p.function, p.event) for p in local.stream_pollers]
    for function, event in sources:
        failures = next((q for q in local.stack.queues if q.arn == event.on_failure_arn), None)
        if failures is None:
            continue
        lines.append(f"# what {function.logical_id}.{event.name} gave up on, replayed:")
        target = _feeding_queue(local, function)
        # A DynamoDB stream consumer that also reads a queue takes its records again there; one
        # that does not (the outbox relay) takes the outbox items in them.
        records = isinstance(event, StreamEventSpec) and any(
            poller.function is function for poller in local.sqs_pollers
        )
        flag = " --stream-records" if records else ""
        lines.append(f"lambda-inbox replay --from {failures.name} --to {target}{flag}")
    return lines


def _feeding_queue(local: LocalStack, function: FunctionSpec) -> str:
    for poller in local.sqs_pollers:
        if poller.function is function:
            return poller.queue.name
    # A queue its environment names, but not its dead-letter queue: poison goes there, not work.
    dead_letters = function.environment.get("DEAD_LETTER_QUEUE_URL")
    named = [
        q.name
        for q in local.stack.queues
        if q.url in function.environment.values() and q.url != dead_letters
    ]
    return named[0] if len(named) == 1 else "<QUEUE>"


def _indexes(table: TableSpec) -> set[str]:
    return {str(index.get("IndexName")) for index in table.global_secondary_indexes}
