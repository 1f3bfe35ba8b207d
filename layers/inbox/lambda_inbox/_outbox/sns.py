"""Outbox messages to an SNS topic: `PublishBatch`, ten entries and 256 KB a call.

Each message carries its id as the `outbox-message-id` message attribute (SNS hands it to an
SQS subscription as a message attribute, or in the notification's `MessageAttributes`). On a
FIFO topic the id is also the `MessageDeduplicationId` (SNS drops a copy published again within
its five-minute window) and the item's group, the message id unless it names one, is the
`MessageGroupId`: messages of one group reach each subscribed FIFO queue in the order the relay
publishes them. A `Failed` entry is retryable unless the fault is the sender's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lambda_inbox._internal import MAX_BATCH_ENTRIES, SNS_MAX_MESSAGE_BYTES
from lambda_inbox._outbox.destinations import Destination
from lambda_inbox._outbox.sending import (
    Refusal,
    attributed_size,
    batch_refusals,
    fifo_ids,
    string_attributes,
)
from lambda_inbox.store._outbox_item import OutboxMessage

__all__ = ["SnsSender", "sns_entry"]

MAX_BYTES = SNS_MAX_MESSAGE_BYTES


def sns_entry(entry_id: str, message: OutboxMessage, fifo: bool) -> dict[str, Any]:
    """The PublishBatch entry of one outbox message (`fifo`: for a FIFO topic)."""
    entry: dict[str, Any] = {
        "Id": entry_id,
        "Message": message.body,
        "MessageAttributes": string_attributes(message),
    }
    if fifo:
        entry.update(fifo_ids(message))
    return entry


@dataclass(frozen=True, slots=True)
class SnsSender:
    destination: Destination
    client: Any
    max_entries: int = MAX_BATCH_ENTRIES
    max_bytes: int = MAX_BYTES

    def size(self, message: OutboxMessage) -> int:
        return attributed_size(message)

    def problem(self, message: OutboxMessage) -> str | None:
        size = self.size(message)
        return f"{size} bytes; SNS takes {MAX_BYTES}" if size > MAX_BYTES else None

    def send(self, batch: Sequence[tuple[str, OutboxMessage]]) -> list[Refusal]:
        fifo = self.destination.fifo
        entries = [sns_entry(entry_id, message, fifo) for entry_id, message in batch]
        answer = self.client.publish_batch(
            TopicArn=self.destination.target, PublishBatchRequestEntries=entries
        )
        return batch_refusals(answer)
