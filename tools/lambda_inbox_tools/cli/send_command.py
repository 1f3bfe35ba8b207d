"""`send`: publish one message to a queue, a Kafka topic, a Kinesis stream, an SNS topic or an
EventBridge bus, with no AWS CLI installed (a local stack's, or real ones)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..aws import Failure, UsageProblem, resolve_queue
from .common import EndpointOption, JsonOption, RegionOption, command, session


@command(
    epilog="Examples:\n\n"
    '  lambda-inbox send --queue invoices --body \'{"invoice_id": "inv-1"}\'\n'
    "  lambda-inbox send --queue orders.fifo --file order.json --group-id cust-1\n"
    "  lambda-inbox send --topic payments --bootstrap-servers 127.0.0.1:9092 --file p.json\n"
    '  lambda-inbox send --stream deposits --key acct-1 --body \'{"event_id": "d-1"}\'\n'
    "  lambda-inbox send --sns-topic arn:aws:sns:us-east-1:123456789012:orders --file o.json\n"
    "  lambda-inbox send --event-bus orders --source com.example --detail-type OrderPlaced "
    "--file o.json\n\n"
    "Queues are found by URL, name or ARN at the SQS endpoint ($AWS_ENDPOINT_URL_SQS, or "
    "--endpoint-url), Kinesis streams by name or ARN at $AWS_ENDPOINT_URL_KINESIS; topics need "
    "the `local` extra (confluent-kafka). A --file is sent as its bytes: an Avro or Protobuf "
    "value (Confluent-framed or not) goes to a topic or a stream as it is. An SNS topic "
    "(by ARN, at $AWS_ENDPOINT_URL_SNS) gets the body as its message and --attribute as its "
    "message attributes; an EventBridge bus (name or ARN, at $AWS_ENDPOINT_URL_EVENTBRIDGE) gets "
    "one event whose detail is the body (a JSON object)."
)
def send(
    queue: Annotated[
        str | None,
        typer.Option("--queue", metavar="QUEUE", help="Queue to send to (URL, name or ARN)."),
    ] = None,
    topic: Annotated[
        str | None, typer.Option("--topic", metavar="TOPIC", help="Kafka topic to produce to.")
    ] = None,
    stream: Annotated[
        str | None,
        typer.Option("--stream", metavar="STREAM", help="Kinesis stream to put to (name or ARN)."),
    ] = None,
    sns_topic: Annotated[
        str | None,
        typer.Option("--sns-topic", metavar="ARN", help="SNS topic to publish to."),
    ] = None,
    event_bus: Annotated[
        str | None,
        typer.Option("--event-bus", metavar="BUS", help="EventBridge bus to put an event on."),
    ] = None,
    source: Annotated[
        str, typer.Option("--source", metavar="SOURCE", help="The event's source (--event-bus).")
    ] = "lambda-inbox.send",
    detail_type: Annotated[
        str,
        typer.Option(
            "--detail-type", metavar="TYPE", help="The event's detail-type (--event-bus)."
        ),
    ] = "Message",
    bootstrap_servers: Annotated[
        str | None,
        typer.Option("--bootstrap-servers", metavar="HOST:PORT", help="Kafka bootstrap servers."),
    ] = None,
    body: Annotated[
        str | None, typer.Option("--body", metavar="TEXT", help="The message body.")
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", metavar="PATH", help="Read the body from a file ('-': stdin)."),
    ] = None,
    attribute: Annotated[
        list[str] | None,
        typer.Option("--attribute", metavar="NAME=VALUE", help="A String attribute or header."),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            metavar="KEY",
            help="Kafka record key; Kinesis partition key (default: a digest of the body).",
        ),
    ] = None,
    group_id: Annotated[
        str | None, typer.Option("--group-id", metavar="ID", help="FIFO message group id.")
    ] = None,
    deduplication_id: Annotated[
        str | None,
        typer.Option("--deduplication-id", metavar="ID", help="FIFO deduplication id."),
    ] = None,
    endpoint_url: EndpointOption = None,
    region: RegionOption = None,
    json_output: JsonOption = False,
) -> None:
    """Publish one message to a queue, a Kafka topic, a Kinesis stream, an SNS topic or an
    EventBridge bus."""
    if [queue, topic, stream, sns_topic, event_bus].count(None) != 4:
        raise typer.BadParameter(
            "name exactly one of --queue, --topic, --stream, --sns-topic and --event-bus",
            param_hint="--queue",
        )
    text = _body(body, file)
    attributes = _attributes(attribute or [])
    if stream is not None and attributes:
        raise typer.BadParameter("a Kinesis record has no attributes", param_hint="--attribute")
    with session(json_output=json_output, endpoint_url=endpoint_url, region=region) as (out, aws):
        if stream is not None:
            document: dict[str, Any] = _put(aws.kinesis(), stream, text, key, aws.where("kinesis"))
        elif sns_topic is not None:
            document = _publish(aws.sns(), sns_topic, _text(text), attributes, group_id)
        elif event_bus is not None:
            if attributes:
                raise UsageProblem("an EventBridge event has no attributes: put them in the body")
            event = {"Source": source, "DetailType": detail_type, "Detail": _text(text)}
            document = _put_event(aws.events(), event_bus, event, aws.where("events"))
        elif topic is not None:
            if not bootstrap_servers:
                raise UsageProblem("--topic needs --bootstrap-servers HOST:PORT")
            offset = _produce(bootstrap_servers, topic, text, key, attributes)
            document = {"topic": topic, **offset}
        else:
            sqs = aws.sqs()
            target = resolve_queue(sqs, queue or "", option="--queue", where=aws.where("sqs"))
            request: dict[str, Any] = {"QueueUrl": target.url, "MessageBody": _text(text)}
            if attributes:
                request["MessageAttributes"] = {
                    name: {"DataType": "String", "StringValue": value}
                    for name, value in attributes.items()
                }
            if target.url.endswith(".fifo"):
                if not group_id:
                    raise UsageProblem(f"{target.name} is a FIFO queue: pass --group-id")
                request["MessageGroupId"] = group_id
                if deduplication_id:
                    request["MessageDeduplicationId"] = deduplication_id
            message_id = sqs.send_message(**request)["MessageId"]
            document = {"queue": target.url, "message_id": message_id}
        if out.json_mode:
            out.emit(document)
        else:
            line = " ".join(f"{name} {value}" for name, value in document.items())
            out.out.print(line, soft_wrap=True)


def _body(body: str | None, file: Path | None) -> bytes:
    """The body as bytes: a Kafka value may be binary (Avro, Protobuf) and is sent as it is."""
    if (body is None) == (file is None):
        raise typer.BadParameter("give the body with exactly one of --body and --file")
    if file is None:
        return (body or "").encode("utf-8")
    if str(file) == "-":
        return sys.stdin.buffer.read()
    try:
        return file.read_bytes()
    except OSError as error:
        raise typer.BadParameter(f"cannot read {file}: {error.strerror}") from None


def _text(body: bytes) -> str:
    """An SQS body is text: binary bodies go to Kafka topics only."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageProblem(
            "an SQS message body must be UTF-8 text; a binary value can go to a --topic"
        ) from None


def _attributes(items: list[str]) -> dict[str, str]:
    attributes: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="--attribute")
        attributes[name] = value
    return attributes


def _put(kinesis: Any, stream: str, data: bytes, key: str | None, where: str) -> dict[str, Any]:
    """Put one record; the partition key defaults to a digest of the data (one shard per body,
    as a producer hashing its payload would)."""
    import hashlib

    from botocore.exceptions import ClientError

    name = stream.split(":stream/", 1)[-1]
    partition_key = key or hashlib.sha256(data).hexdigest()[:32]
    try:
        answer = kinesis.put_record(StreamName=name, Data=data, PartitionKey=partition_key)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            raise UsageProblem(f"no Kinesis stream {name!r} at {where}") from None
        raise Failure(f"Kinesis at {where}: {error}") from None
    return {
        "stream": name,
        "shard_id": answer["ShardId"],
        "sequence_number": answer["SequenceNumber"],
        "partition_key": partition_key,
    }


def _publish(
    sns: Any, topic_arn: str, message: str, attributes: dict[str, str], group_id: str | None
) -> dict[str, Any]:
    """Publish to an SNS topic: the subscribed queues get the notification (or, with raw
    message delivery, the message) as SNS sends it."""
    from botocore.exceptions import ClientError

    request: dict[str, Any] = {"TopicArn": topic_arn, "Message": message}
    if attributes:
        request["MessageAttributes"] = {
            name: {"DataType": "String", "StringValue": value} for name, value in attributes.items()
        }
    if topic_arn.endswith(".fifo"):
        if not group_id:
            raise UsageProblem(f"{topic_arn} is a FIFO topic: pass --group-id")
        request["MessageGroupId"] = group_id
    try:
        message_id = sns.publish(**request)["MessageId"]
    except ClientError as error:
        raise Failure(f"SNS: {error}") from None
    return {"sns_topic": topic_arn, "message_id": message_id}


def _put_event(events: Any, bus: str, event: dict[str, str], where: str) -> dict[str, Any]:
    """Put one event on a bus; the rules of the bus route it to their targets."""
    from botocore.exceptions import ClientError

    try:
        answer = events.put_events(Entries=[{**event, "EventBusName": bus}])
    except ClientError as error:
        raise Failure(f"EventBridge at {where}: {error}") from None
    (entry,) = answer["Entries"]
    if answer.get("FailedEntryCount") or "EventId" not in entry:
        reason = entry.get("ErrorMessage") or entry.get("ErrorCode") or "refused"
        raise Failure(f"EventBridge at {where} did not take the event: {reason}")
    return {"event_bus": bus, "event_id": entry["EventId"]}


def _produce(
    bootstrap: str, topic: str, value: bytes, key: str | None, headers: dict[str, str]
) -> dict[str, Any]:
    try:
        from confluent_kafka import KafkaException, Producer
    except ImportError:
        raise UsageProblem(
            "Kafka needs the local extra: pip install 'lambda-inbox[local]'"
        ) from None
    delivered: dict[str, Any] = {}

    def done(error: Any, message: Any) -> None:
        if error is not None:
            delivered["error"] = str(error)
        else:
            delivered.update(partition=message.partition(), offset=message.offset())

    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10_000})
    try:
        producer.produce(
            topic,
            value=value,
            key=key.encode("utf-8") if key is not None else None,
            headers=[(name, value.encode("utf-8")) for name, value in headers.items()],
            on_delivery=done,
        )
        producer.flush(15)
    except KafkaException as error:
        raise Failure(f"Kafka at {bootstrap}: {error}") from None
    if "offset" not in delivered:
        reason = delivered.get("error", "no answer within 15 s")
        raise Failure(f"Kafka at {bootstrap} did not take the record: {reason}")
    return delivered
