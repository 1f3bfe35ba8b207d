"""Outbox messages to an EventBridge event bus: `PutEvents`, ten entries and 256 KB a call.

An event's `Detail` is the item's body (a JSON object), untouched; its `Source` and
`DetailType` are the item's (`lambda-inbox.outbox` and `OutboxMessage` unless it names them).
EventBridge gives every event it accepts a new `id`, so the outbox message id travels in the
event itself: as the one entry `outbox-message-id:<id>` of its `resources`. There, the receiver's
payload (`detail`) is the document the writer wrote whatever the destination kind, and rules can
match it by prefix. (PutEvents takes any strings in `Resources`: AWS's own sample request sends
`"resource1"`.) EventBridge counts an entry's size as the UTF-8 bytes of `Source`,
`DetailType`, `Detail` and each of `Resources` (docs: "Calculating PutEvents event entry
size"). Its answer lists the entries in request order; an entry with an `ErrorCode` was refused,
retryable for `ThrottlingException` and `InternalFailure`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lambda_inbox._internal import EVENTBRIDGE_MAX_ENTRY_BYTES, MAX_BATCH_ENTRIES
from lambda_inbox._outbox.destinations import Destination
from lambda_inbox._outbox.sending import Refusal
from lambda_inbox._sources.identity import OUTBOX_RESOURCE_PREFIX, outbox_message_id_of
from lambda_inbox.store._outbox_item import OutboxMessage, eventbridge_problem

__all__ = ["RESOURCE_PREFIX", "EventBridgeSender", "event_entry", "outbox_message_id_of"]

MAX_BYTES = EVENTBRIDGE_MAX_ENTRY_BYTES
#: `resources` entry of an event that carries its outbox message id: this prefix, then the id
#: (the receiving side reads it with `outbox_message_id_of`).
RESOURCE_PREFIX = OUTBOX_RESOURCE_PREFIX
#: Refused entries worth sending again (the others are the sender's fault).
RETRYABLE_CODES = frozenset({"ThrottlingException", "InternalFailure", "NoResult"})


def event_entry(message: OutboxMessage, bus: str) -> dict[str, Any]:
    """The PutEvents entry of one outbox message for the bus `bus` (name or ARN)."""
    return {
        "Source": message.event_source,
        "DetailType": message.detail_type,
        "Detail": message.body,
        "Resources": [RESOURCE_PREFIX + message.message_id],
        "EventBusName": bus,
    }


@dataclass(frozen=True, slots=True)
class EventBridgeSender:
    destination: Destination
    client: Any
    max_entries: int = MAX_BATCH_ENTRIES
    max_bytes: int = MAX_BYTES

    def size(self, message: OutboxMessage) -> int:
        entry = event_entry(message, self.destination.target)
        parts = (entry["Source"], entry["DetailType"], entry["Detail"], *entry["Resources"])
        return sum(len(part.encode("utf-8")) for part in parts)

    def problem(self, message: OutboxMessage) -> str | None:
        problem = eventbridge_problem(message.attributes, message.body)
        if problem is not None:
            return problem
        size = self.size(message)
        return f"{size} bytes; EventBridge takes {MAX_BYTES}" if size > MAX_BYTES else None

    def send(self, batch: Sequence[tuple[str, OutboxMessage]]) -> list[Refusal]:
        bus = self.destination.target
        answer = self.client.put_events(Entries=[event_entry(m, bus) for _, m in batch])
        results = answer.get("Entries") or []
        if not answer.get("FailedEntryCount") and len(results) == len(batch):
            return []
        refused = []
        for position, (entry_id, _) in enumerate(batch):
            # An entry the answer does not account for is not known to be sent: sent again.
            result = results[position] if position < len(results) else {"ErrorCode": "NoResult"}
            code = result.get("ErrorCode")
            if code:
                reason = str(result.get("ErrorMessage", ""))
                refused.append(Refusal(entry_id, str(code), reason, code in RETRYABLE_CODES))
        return refused
