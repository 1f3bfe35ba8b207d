"""The outbox relay: DynamoDB stream records of outbox items in, messages out, at least once.

`OutboxRelay().handle(event, context)` is a whole stream-triggered handler:

- an item's destination is a queue URL, or a name that `destinations` maps to one (so the
  consumers that write outbox items need no queue URL of their own); an unknown name is a
  failure of that record, logged, never a silent drop;
- only `INSERT` records of outbox items are sent (removals, such as TTL expiry, and updates are
  acknowledged and ignored; so is an item that is no outbox item);
- messages are sent with `SendMessageBatch`, ten at a time per destination queue, each carrying
  its fixed message id (attribute `outbox-message-id`; on a FIFO queue also the deduplication
  id, and the group id unless the item names one);
- every call runs under the invocation's deadline (`Deadline.run`), like every other call of
  the library; a record whose send failed, was refused, or found no time left is reported in
  the partial batch response (`itemIdentifier` = its `SequenceNumber`), and the event source
  retries from there. What was sent before is sent again: the receiver's inbox absorbs it;
- metrics (EMF, Powertools): `OutboxRelayed`, `OutboxRelayFailures` and
  `OutboxOldestItemAge` (seconds since the oldest item of the batch was written: how far the
  relay is behind).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError

from lambda_inbox.aws_clients import bounded, bounded_sqs_client
from lambda_inbox.config import RetryPolicy
from lambda_inbox.deadline import Deadline
from lambda_inbox.errors import DeadlineReached
from lambda_inbox.outbox.message import OutboxMessage

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

__all__ = ["MESSAGE_ID_ATTRIBUTE", "OutboxRelay"]

MESSAGE_ID_ATTRIBUTE = "outbox-message-id"
SQS_BATCH = 10
_DESERIALIZER = TypeDeserializer()


def _plain_image(image: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _DESERIALIZER.deserialize(value) for name, value in image.items()}


def sqs_entry(entry_id: str, message: OutboxMessage, queue_url: str) -> dict[str, Any]:
    """The SendMessageBatch entry of one outbox message for the queue `queue_url`."""
    attributes = {
        name: {"DataType": "String", "StringValue": value}
        for name, value in message.attributes.items()
    }
    attributes[MESSAGE_ID_ATTRIBUTE] = {"DataType": "String", "StringValue": message.message_id}
    entry: dict[str, Any] = {
        "Id": entry_id,
        "MessageBody": message.body,
        "MessageAttributes": attributes,
    }
    if queue_url.endswith(".fifo"):
        entry["MessageGroupId"] = message.group_id or message.message_id
        entry["MessageDeduplicationId"] = message.message_id
    return entry


class OutboxRelay:
    """Relays outbox items from a DynamoDB stream to SQS, at least once: `handle` is a whole
    stream-triggered handler (`OutboxRelay().handle(event, context)`).

    `destinations` maps an item's destination name to a queue URL (a destination that is a URL
    is used as it is); `sqs` is the SQS client (made with the library's bounded configuration on
    first use when not given); `logger`, `service` and `namespace` are the Powertools logger,
    service and metrics namespace (`POWERTOOLS_SERVICE_NAME`, `POWERTOOLS_METRICS_NAMESPACE`);
    `retry` bounds each send by the invocation's deadline; `clock` dates the items' age.
    """

    def __init__(
        self,
        *,
        destinations: Mapping[str, str] | None = None,
        sqs: SQSClient | None = None,
        logger: Logger | None = None,
        namespace: str | None = None,
        service: str | None = None,
        retry: RetryPolicy | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.destinations = dict(destinations or {})
        self.service = service or os.environ.get("POWERTOOLS_SERVICE_NAME", "outbox-relay")
        self.namespace = namespace or os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "LambdaInbox")
        self.logger = logger or Logger(service=self.service)
        self.retry = retry or RetryPolicy()
        self.clock = clock
        self.sqs: SQSClient = bounded(sqs) if sqs is not None else bounded_sqs_client()

    def handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        """Send the outbox items the stream records of `event` inserted; returns the partial
        batch response (`itemIdentifier`: the first record whose send failed, by its
        `SequenceNumber`). Removals, updates and other items are acknowledged and ignored."""
        deadline = Deadline.from_context(context, self.retry)
        pending: dict[str, list[tuple[str, OutboxMessage]]] = {}
        failed: list[str] = []
        ignored = 0
        records = event.get("Records") or []
        position: dict[str, int] = {}
        for index, record in enumerate(records):
            sequence = str((record.get("dynamodb") or {}).get("SequenceNumber", ""))
            position[sequence] = index
            message = self._message(record, sequence)
            if message is None:
                ignored += 1
            elif isinstance(message, OutboxMessage):
                pending.setdefault(message.destination, []).append((sequence, message))
            else:
                failed.append(sequence)
        sent: list[OutboxMessage] = []
        for destination, messages in pending.items():
            queue_url = self._queue_url(destination)
            if queue_url is None:
                self.logger.error("outbox destination unknown", destination=destination)
                failed.extend(sequence for sequence, _ in messages)
                continue
            for start in range(0, len(messages), SQS_BATCH):
                chunk = messages[start : start + SQS_BATCH]
                refused = self._send(deadline, queue_url, chunk)
                failed.extend(refused)
                sent.extend(m for s, m in chunk if s not in refused)
        self._emit(sent, len(failed), ignored, len(records))
        failed.sort(key=lambda sequence: position.get(sequence, 0))  # in stream order
        return {"batchItemFailures": [{"itemIdentifier": s} for s in failed]}

    def _queue_url(self, destination: str) -> str | None:
        if destination in self.destinations:
            return self.destinations[destination]
        return destination if destination.startswith(("https://", "http://")) else None

    def _message(self, record: Mapping[str, Any], sequence: str) -> OutboxMessage | str | None:
        """The outbox message of a record; None to ignore it; an error text when it cannot be
        sent (reported as a failure: the item stays in the table, the record is retried)."""
        if record.get("eventName") != "INSERT":
            return None
        image = (record.get("dynamodb") or {}).get("NewImage")
        if not isinstance(image, Mapping):
            return "no NewImage: the stream must carry NEW_IMAGE or NEW_AND_OLD_IMAGES"
        try:
            return OutboxMessage.from_item(_plain_image(image))
        except (TypeError, ValueError) as error:
            self.logger.error("outbox item cannot be sent", sequence=sequence, error=str(error))
            return str(error)

    def _send(
        self, deadline: Deadline, destination: str, chunk: Sequence[tuple[str, OutboxMessage]]
    ) -> list[str]:
        """Send one chunk; the sequence numbers of the records not sent."""
        entries = [sqs_entry(str(i), message, destination) for i, (_, message) in enumerate(chunk)]
        try:
            answer = deadline.run(
                self.sqs.send_message_batch, QueueUrl=destination, Entries=entries
            )
        except (ClientError, BotoCoreError, DeadlineReached) as error:
            self.logger.warning(
                "outbox send failed", destination=destination, count=len(chunk), error=str(error)
            )
            return [sequence for sequence, _ in chunk]
        refused = {int(f["Id"]) for f in answer.get("Failed", [])}
        for failure in answer.get("Failed", []):
            self.logger.warning(
                "outbox message refused",
                destination=destination,
                message_id=chunk[int(failure["Id"])][1].message_id,
                code=failure.get("Code"),
                error=failure.get("Message"),
            )
        return [sequence for i, (sequence, _) in enumerate(chunk) if i in refused]

    def _emit(
        self, sent: Sequence[OutboxMessage], failures: int, ignored: int, records: int
    ) -> None:
        metrics = EphemeralMetrics(namespace=self.namespace, service=self.service)
        metrics.add_metric(name="OutboxRelayed", unit=MetricUnit.Count, value=len(sent))
        metrics.add_metric(name="OutboxRelayFailures", unit=MetricUnit.Count, value=failures)
        if sent:
            oldest = max(0.0, self.clock() - min(m.created_at for m in sent))
            metrics.add_metric(
                name="OutboxOldestItemAge", unit=MetricUnit.Seconds, value=round(oldest, 3)
            )
        metrics.flush_metrics()
        self.logger.info(
            "outbox batch relayed",
            records=records,
            relayed=len(sent),
            failed=failures,
            ignored=ignored,
        )
