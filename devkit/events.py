"""This repository's events: the sample events of `events/`, the example application's queue
and cluster ARNs as defaults of the kit's builders (`lambda_inbox_tools.testing.events`, every
other name of which is re-exported here), parsed messages for the engine's unit tests, and outbox items as a table's stream shows them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from devkit.paths import EVENTS_DIR
from lambda_inbox import InboundMessage, UnitOfWork
from lambda_inbox.wire import parse_sqs_event
from lambda_inbox_tools.services.offline import ACCOUNT, REGION
from lambda_inbox_tools.testing import events
from lambda_inbox_tools.testing.delivery import event_after, failed_ids, failed_offsets
from lambda_inbox_tools.testing.events import (
    KAFKA_TIMESTAMP_MS,
    SENDER_ID,
    SENT_TIMESTAMP_MS,
    binary_attribute,
    delivered_again,
    kafka_record,
    lambda_attributes,
    payload,
    received_attributes,
    record_id,
    sqs_event,
    sqs_record_from,
    string_attribute,
)

__all__ = [
    "KAFKA_TIMESTAMP_MS",
    "MSK_CLUSTER_ARN",
    "ORDER_FIFO_QUEUE_ARN",
    "ORDER_QUEUE_ARN",
    "PAYMENT_REPLAY_QUEUE_ARN",
    "SENDER_ID",
    "SENT_TIMESTAMP_MS",
    "binary_attribute",
    "delivered_again",
    "event_after",
    "failed_ids",
    "failed_offsets",
    "inbound_message",
    "kafka_event",
    "kafka_record",
    "lambda_attributes",
    "load_event",
    "payload",
    "received_attributes",
    "record_id",
    "replayed",
    "sample_event_names",
    "sqs_event",
    "sqs_record",
    "sqs_record_from",
    "string_attribute",
]

ORDER_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lambda-inbox-OrderEventsQueue"
ORDER_FIFO_QUEUE_ARN = f"{ORDER_QUEUE_ARN}.fifo"
PAYMENT_REPLAY_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lambda-inbox-PaymentReplayQueue"
MSK_CLUSTER_ARN = f"arn:aws:kafka:{REGION}:{ACCOUNT}:cluster/payments/test"

# ---- sample events ------------------------------------------------------------------------------


def load_event(name: str) -> dict[str, Any]:
    """A sample event of `events/` (e.g. "sqs-order-single.json"), freshly read."""
    loaded: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text())
    return loaded


def sample_event_names(prefix: str) -> list[str]:
    """The file names of the sample events starting with `prefix` (e.g. "sqs-"), sorted."""
    return sorted(path.name for path in EVENTS_DIR.glob(f"{prefix}*.json"))


# ---- SQS and Kafka, with this repository's queues and cluster as defaults -----------------------


def sqs_record(body: str | Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """`lambda_inbox_tools.testing.events.sqs_record`, from OrderEventsQueue (its FIFO twin
    for a record with a group) unless `arn` is given."""
    options.setdefault("arn", ORDER_FIFO_QUEUE_ARN if options.get("group") else ORDER_QUEUE_ARN)
    return events.sqs_record(body, **options)


def kafka_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """`lambda_inbox_tools.testing.events.kafka_event` from this repository's test cluster."""
    return events.kafka_event(records, arn=MSK_CLUSTER_ARN)


def replayed(dead_letter: Mapping[str, Any], *, arn: str = ORDER_QUEUE_ARN) -> InboundMessage:
    """The message the SQS adapter reads when `dead_letter` (as ReceiveMessage returns it) is
    redriven to the queue `arn`: `body` is the original bytes the dead-letter envelope carries,
    `attributes` the original message attributes."""
    (message,) = parse_sqs_event(sqs_event(sqs_record_from(dead_letter, arn=arn)))
    return message


# ---- parsed messages ----------------------------------------------------------------------------


def inbound_message(
    body: bytes | str = b"{}",
    *,
    delivery_id: str = "m-1",
    sequence: int = 0,
    source: str = ORDER_QUEUE_ARN,
    attributes: dict[str, str] | None = None,
    deduplication_id: str | None = None,
    **fields: Any,
) -> InboundMessage:
    """A message as the SQS or Kafka adapter hands it to the engine (item identifier =
    delivery id); `fields` sets the other `InboundMessage` fields."""
    return InboundMessage(
        item_identifier=delivery_id,
        delivery_id=delivery_id,
        body=body.encode("utf-8") if isinstance(body, str) else body,
        source=source,
        sequence=sequence,
        attributes=attributes or {},
        deduplication_id=deduplication_id,
        **fields,
    )


def outbox_image(
    message_id: str, destination: str, body: str | Mapping[str, Any] = '{"n":1}', **fields: Any
) -> dict[str, Any]:
    """The outbox item (DynamoDB JSON) a handler's `UnitOfWork.outbox` writes for these fields,
    as the table stores it and its stream shows it."""
    uow = UnitOfWork()
    uow.outbox("domain", destination=destination, body=body, message_id=message_id, **fields)
    item: dict[str, Any] = uow.actions[0].request["Item"]
    return item
