"""Zoo consumers of a standard queue an SNS topic feeds (devkit.zoo, source "sns"), written with
the library itself: SNS delivers a notification to the queue again under a new SQS `messageId`
(its own retry, or a redrive), and the check plays that (`Report.sns_redeliveries`).

- `with_the_sns_envelope`: `InboxConsumer(..., envelope="sns")` with no key extractor. Its
  delivery id is the notification's `MessageId`, the same on every delivery of it: sound.
- `keyed_by_the_sqs_message_id`: the same consumer without the envelope, unwrapping the
  notification's `Message` by hand in its model. Its delivery id is the SQS `messageId`, new on
  SNS's redelivery: the notification is applied twice.

Both run on the zoo's ledger (devkit's in-memory DynamoDB, its inbox table beside the ledger);
their effect is the ledger's (`ADD applied :1` on `EFFECT#{event_id}`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any
from unittest import mock

from aws_lambda_powertools import Logger

from lambda_inbox import (
    Clients,
    GroupCommit,
    InboxConfig,
    InboxConsumer,
    Observability,
    RetryPolicy,
    UnitOfWork,
)
from lambda_inbox._sources import EnvelopeName
from lambda_inbox_tools.testing import payload, sns_notification, sqs_record

from .zoo_ledger import RUN, Ledger

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
#: The source label of an SQS standard queue whose bodies are SNS notifications.
SNS = "sns"


def notification_records(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each body published to a topic: an SQS record whose body is its SNS notification."""
    return [
        sqs_record(sns_notification(body, message_id=f"n-{body['event_id']}")) for body in bodies
    ]


def message_key(record: Mapping[str, Any]) -> str:
    """The `event_id` of the message a record carries, inside its SNS notification or not."""
    document = payload(record)
    if document.get("Type") == "Notification":
        document = json.loads(document["Message"])
    return str(document["event_id"])


def _consumer(ledger: Ledger, envelope: EnvelopeName | None, model: Any) -> Handler:
    def decide(message: dict[str, Any], uow: UnitOfWork) -> None:
        effect = ledger.effect(str(message["event_id"]))
        key = {"pk": RUN, "sk": effect["Key"]["sk"]["S"]}
        uow.update(ledger.table, key, "ADD applied :one", values={":one": 1})

    config = InboxConfig(
        "zoo-sns",
        inbox_table=ledger.inbox,
        retry=RetryPolicy(base_delay=0.001, max_delay=0.002),
        commit=GroupCommit(max_parallel_commits=1),
    )
    # Quiet: the zoo's table is what it prints (metrics off, read once at construction).
    with mock.patch.dict(os.environ, {"POWERTOOLS_METRICS_DISABLED": "true"}):
        consumer = InboxConsumer(
            "zoo-sns",
            model=model,
            decide=decide,
            envelope=envelope,
            clients=Clients(dynamodb=ledger.dynamodb),
            observability=Observability(logger=Logger(service="zoo-sns", level="ERROR")),
            config=config,
        )

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return consumer.handle(event, context)

    return handler


def with_the_sns_envelope(ledger: Ledger) -> Handler:
    """No key extractor, `envelope="sns"`: keyed by the notification's `MessageId`."""
    return _consumer(ledger, "sns", dict)


def _message(notification: dict[str, Any]) -> dict[str, Any]:
    """The unwrapping a team writes by hand without the envelope."""
    message: dict[str, Any] = json.loads(notification["Message"])
    return message


def keyed_by_the_sqs_message_id(ledger: Ledger) -> Handler:
    """No key extractor, no envelope, the notification unwrapped by hand: keyed by the SQS
    `messageId`."""
    return _consumer(ledger, None, _message)
