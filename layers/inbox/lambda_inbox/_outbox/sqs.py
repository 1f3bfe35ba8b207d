"""Outbox messages to an SQS queue: `SendMessageBatch`, ten entries and 256 KB a call.

Each message carries its id as the `outbox-message-id` attribute; on a FIFO queue also as its
`MessageDeduplicationId`, with the item's group (the message id unless it names one) as its
`MessageGroupId`. An entry SQS refuses is retryable unless the fault is the sender's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lambda_inbox._internal import MAX_BATCH_ENTRIES, SQS_MAX_MESSAGE_BYTES
from lambda_inbox._outbox.destinations import Destination
from lambda_inbox._outbox.sending import (
    Refusal,
    attributed_size,
    batch_refusals,
    fifo_ids,
    string_attributes,
)
from lambda_inbox.store._outbox_item import OutboxMessage

__all__ = ["SqsSender", "sqs_entry"]

MAX_BYTES = SQS_MAX_MESSAGE_BYTES


def sqs_entry(entry_id: str, message: OutboxMessage, queue_url: str) -> dict[str, Any]:
    """The SendMessageBatch entry of one outbox message for the queue `queue_url`."""
    entry: dict[str, Any] = {
        "Id": entry_id,
        "MessageBody": message.body,
        "MessageAttributes": string_attributes(message),
    }
    if queue_url.endswith(".fifo"):
        entry.update(fifo_ids(message))
    return entry


@dataclass(frozen=True, slots=True)
class SqsSender:
    destination: Destination
    client: Any
    max_entries: int = MAX_BATCH_ENTRIES
    max_bytes: int = MAX_BYTES

    def size(self, message: OutboxMessage) -> int:
        return attributed_size(message)

    def problem(self, message: OutboxMessage) -> str | None:
        size = self.size(message)
        return f"{size} bytes; SQS takes {MAX_BYTES}" if size > MAX_BYTES else None

    def send(self, batch: Sequence[tuple[str, OutboxMessage]]) -> list[Refusal]:
        url = self.destination.target
        entries = [sqs_entry(entry_id, message, url) for entry_id, message in batch]
        answer = self.client.send_message_batch(QueueUrl=url, Entries=entries)
        return batch_refusals(answer)
