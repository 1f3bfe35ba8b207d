"""The outbox relay: DynamoDB stream records of outbox items in, messages out, at least once.

`OutboxRelay().handle(event, context)` is a whole stream-triggered handler:

- an item's destination is an SQS queue URL, an SNS topic ARN or an EventBridge bus ARN, or a
  name that `destinations` maps to one of these or to a bus name (`outbox.destinations`), so
  the consumers that write outbox items need no target of their own; an unknown name is a
  failure of that record, logged, never a silent drop;
- only `INSERT` records of outbox items are sent (removals, such as TTL expiry, and updates are
  acknowledged and ignored; so is an item that is no outbox item);
- messages go in batches per destination, each carrying its fixed message id: SQS
  `SendMessageBatch` (`outbox.sqs`), SNS `PublishBatch` (`outbox.sns`), EventBridge `PutEvents`
  (`outbox.eventbridge`), within each call's limits of entries and bytes;
- every call runs under the invocation's deadline (`Deadline.run`), like every other call of
  the library; entries refused for a transient reason (throttling, a fault of the service) are
  sent again after a backoff while time is left (`outbox.sending.deliver`). A record whose
  message was refused, could never be sent (too large, not what its kind takes), or found no
  time left is reported in the partial batch response (`itemIdentifier` = its
  `SequenceNumber`), and the event source retries from there. What was sent before is sent
  again: the receiver's inbox absorbs it;
- metrics (EMF, Powertools, `outbox.metrics`): `OutboxRelayed`, `OutboxRelayFailures`,
  `OutboxOldestItemAge`, and per destination kind with `OutboxRelayRetries`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from lambda_inbox._internal import RetryPolicy
from lambda_inbox._internal.aws_clients import CLIENT_CONFIG, bounded, bounded_sqs_client
from lambda_inbox._internal.deadline import Deadline
from lambda_inbox._outbox.destinations import Destination, resolve
from lambda_inbox._outbox.metrics import RelayTally
from lambda_inbox._outbox.sending import MESSAGE_ID_ATTRIBUTE, Sender, deliver
from lambda_inbox._outbox.sqs import sqs_entry
from lambda_inbox.store._outbox_item import OutboxMessage, outbox_message_of

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

__all__ = ["MESSAGE_ID_ATTRIBUTE", "OutboxRelay", "sender_for", "sqs_entry"]


def sender_for(destination: Destination, client: Any) -> Sender:
    """The sender of `destination`'s kind, through `client` (that kind's boto3 client)."""
    if destination.kind == "sns":
        from lambda_inbox._outbox.sns import SnsSender

        return SnsSender(destination, client)
    if destination.kind == "eventbridge":
        from lambda_inbox._outbox.eventbridge import EventBridgeSender

        return EventBridgeSender(destination, client)
    from lambda_inbox._outbox.sqs import SqsSender

    return SqsSender(destination, client)


class OutboxRelay:
    """Relays outbox items from a DynamoDB stream to queues, topics and buses (see the module
    docstring), at least once: `handle` is a whole stream-triggered handler. `sqs`, `sns` and
    `events` are boto3 clients of each kind (built with the library's client configuration when
    not given, each on its first use).

    `destinations` maps an item's destination name to where it goes; `logger`, `service` and
    `namespace` are the Powertools logger, service and metrics namespace
    (`POWERTOOLS_SERVICE_NAME`, `POWERTOOLS_METRICS_NAMESPACE`); `retry` bounds each send by the
    invocation's deadline; `clock` dates the items' age.
    """

    def __init__(
        self,
        *,
        destinations: Mapping[str, str] | None = None,
        sqs: SQSClient | None = None,
        sns: Any = None,
        events: Any = None,
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
        self._clients: dict[str, Any] = {}
        for kind, client in (("sns", sns), ("eventbridge", events)):
            if client is not None:
                self._clients[kind] = bounded(client)

    def client(self, destination: Destination) -> Any:
        """The client of `destination`'s kind (built on first use; `sqs` read at each use, so
        a harness may swap it)."""
        if destination.kind == "sqs":
            return self.sqs
        if destination.kind not in self._clients:
            import boto3

            service = "events" if destination.kind == "eventbridge" else destination.kind
            self._clients[destination.kind] = bounded(boto3.client(service, config=CLIENT_CONFIG))
        return self._clients[destination.kind]

    def handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        """Send the outbox items the stream records of `event` inserted; returns the partial
        batch response (`itemIdentifier`: a record's `SequenceNumber`). Removals, updates and
        other items are acknowledged and ignored."""
        deadline = Deadline.from_context(context, self.retry)
        records = event.get("Records") or []
        tally = RelayTally(records=len(records))
        pending: dict[Destination, list[tuple[str, OutboxMessage]]] = {}
        failed: list[str] = []
        position: dict[str, int] = {}
        for index, record in enumerate(records):
            sequence = str((record.get("dynamodb") or {}).get("SequenceNumber", ""))
            position[sequence] = index
            message = self._message(record, sequence)
            if message is None:
                tally.ignored += 1
            elif not isinstance(message, OutboxMessage):
                failed.append(sequence)
            else:
                try:
                    destination = resolve(message.destination, self.destinations)
                except ValueError as error:
                    self.logger.error(
                        "outbox destination unknown",
                        destination=message.destination,
                        message_id=message.message_id,
                        error=str(error),
                    )
                    failed.append(sequence)
                    continue
                pending.setdefault(destination, []).append((sequence, message))
        for destination, messages in pending.items():
            failed.extend(self._relay(destination, messages, deadline, tally))
        tally.failed = len(failed)
        tally.emit(self.namespace, self.service, self.clock(), self.logger)
        failed.sort(key=lambda sequence: position.get(sequence, 0))  # in stream order
        return {"batchItemFailures": [{"itemIdentifier": s} for s in failed]}

    def _relay(
        self,
        destination: Destination,
        messages: list[tuple[str, OutboxMessage]],
        deadline: Deadline,
        tally: RelayTally,
    ) -> list[str]:
        """Send `messages` to `destination`, in stream order; the sequence numbers of the
        records not sent.

        On a FIFO queue or topic a batch holds one message per group, and a group whose message
        failed sends none of its later ones in this invocation (they fail too): the stream's
        retry sends them again in order, so a group's order holds through refusals and retries.
        """
        sender = sender_for(destination, self.client(destination))
        failed: list[str] = []
        broken: set[str] = set()  # FIFO groups with a failed message
        batch: list[tuple[str, OutboxMessage]] = []
        used = 0

        def group(message: OutboxMessage) -> str | None:
            return (message.group_id or message.message_id) if destination.fifo else None

        def flush() -> None:
            nonlocal batch, used
            if batch:
                failed.extend(self._deliver(sender, batch, deadline, tally, broken, group))
            batch, used = [], 0

        for sequence, message in messages:
            problem = sender.problem(message)
            if problem is not None:
                self.logger.error(
                    "outbox message cannot be sent",
                    destination=destination.target,
                    message_id=message.message_id,
                    error=problem,
                )
            size = sender.size(message)
            in_batch = {group(m) for _, m in batch} - {None}
            if problem is None and (
                len(batch) == sender.max_entries
                or used + size > sender.max_bytes
                or group(message) in in_batch
            ):
                flush()
            held = group(message) in broken
            if problem is not None or held:
                failed.append(sequence)
                if group(message) is not None:
                    broken.add(str(group(message)))
                continue
            batch.append((sequence, message))
            used += size
        flush()
        tally.failed_by_kind[destination.kind] += len(failed)
        return failed

    def _deliver(
        self,
        sender: Sender,
        batch: list[tuple[str, OutboxMessage]],
        deadline: Deadline,
        tally: RelayTally,
        broken: set[str],
        group: Callable[[OutboxMessage], str | None],
    ) -> list[str]:
        kind = sender.destination.kind
        outcome = deliver(sender, [m for _, m in batch], deadline, self.retry, self.logger)
        tally.retried_by_kind[kind] += outcome.retried
        failed = []
        for index, (sequence, message) in enumerate(batch):
            if index in outcome.failed:
                failed.append(sequence)
                name = group(message)
                if name is not None:
                    broken.add(name)
            else:
                tally.sent_created.append(message.created_at)
                tally.sent_by_kind[kind] += 1
        return failed

    def _message(self, record: Mapping[str, Any], sequence: str) -> OutboxMessage | str | None:
        """The outbox message of a record; None to ignore it; an error text when it cannot be
        sent (reported as a failure: the item stays in the table, the record is retried)."""
        if record.get("eventName") != "INSERT":
            return None
        image = (record.get("dynamodb") or {}).get("NewImage")
        if not isinstance(image, Mapping):
            return "no NewImage: the stream must carry NEW_IMAGE or NEW_AND_OLD_IMAGES"
        try:
            return outbox_message_of(image)
        except (TypeError, ValueError) as error:
            self.logger.error("outbox item cannot be sent", sequence=sequence, error=str(error))
            return str(error)
