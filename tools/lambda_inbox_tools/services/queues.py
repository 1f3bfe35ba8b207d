"""SQS queues on moto (in-process or as a threaded server): the server itself, creating queues,
reading every message back, and their depth."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType
    from mypy_boto3_sqs.type_defs import MessageTypeDef

#: The `SenderId` moto gives every message, whoever sends it (AWS gives each principal its own:
#: docs/aws-fidelity.md): on moto, producers, SNS, the functions and the operator are one
#: principal.
MOTO_SENDER_ID = "AIDAIT2UOQQY3AUEKVGXU"


@contextlib.contextmanager
def running_moto_server() -> Iterator[str]:
    """A threaded moto server (SQS and the rest of moto) on a free loopback port; yields its URL
    `http://127.0.0.1:PORT` and stops it on exit. Its access log is silenced; its EventBridge
    delivers events with `account`, as AWS does (`moto_events`)."""
    from moto.server import ThreadedMotoServer

    from .moto_events import deliver_events_as_aws_does

    deliver_events_as_aws_does()

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def create_queue(client: SQSClient, name: str) -> str:
    """Create queue `name` (a FIFO queue when it ends in `.fifo`) and return its URL."""
    attributes: dict[QueueAttributeNameType, str] = {}
    if name.endswith(".fifo"):
        attributes["FifoQueue"] = "true"
    return client.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


def receive_all(
    client: SQSClient, queue_url: str, *, delete: bool = False, visibility_timeout: int = 300
) -> list[MessageTypeDef]:
    """Every message now in the queue, with all message and system attributes, each once.

    Received messages stay invisible for `visibility_timeout` seconds (0: they stay visible, a
    peek), or are deleted with `delete`."""
    seen: dict[str, MessageTypeDef] = {}
    while True:
        batch = client.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
            VisibilityTimeout=visibility_timeout,
            WaitTimeSeconds=0,
        ).get("Messages", [])
        new = [message for message in batch if message["MessageId"] not in seen]
        if not new:
            return list(seen.values())
        for message in new:
            seen[message["MessageId"]] = message
        if delete:
            client.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(n), "ReceiptHandle": message["ReceiptHandle"]}
                    for n, message in enumerate(new)
                ],
            )


def queue_depth(
    client: SQSClient, queue_url: str, *, in_flight: bool = False, delayed: bool = False
) -> int:
    """The messages waiting in the queue (`ApproximateNumberOfMessages`), plus, with
    `in_flight`, those received but not yet deleted, and with `delayed`, those not yet due."""
    names: list[QueueAttributeNameType] = ["ApproximateNumberOfMessages"]
    if in_flight:
        names.append("ApproximateNumberOfMessagesNotVisible")
    if delayed:
        names.append("ApproximateNumberOfMessagesDelayed")
    attributes = client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)
    return sum(int(value) for value in attributes["Attributes"].values())
