"""What Lambda makes of one invocation of a batch: AWS's rules for a handler's return, in one
function (`batch_outcome`) that every reader of a response uses, the local stack's pollers, the
testing kit's check and its helpers (`events.event_after`, `failed_ids`, ...) alike.

The rules ("Implementing partial batch responses", its "Success and failure conditions", on
https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html, and the same
conditions for streams, services-kinesis-batchfailurereporting.html and
services-ddb-batchfailurereporting.html, and for Kafka, kafka-retry-configurations.html):

- the invocation failed (the handler raised, timed out, or the runtime died): every record of
  the batch failed, whatever the settings;
- without `ReportBatchItemFailures` in the mapping's `FunctionResponseTypes`, Lambda does not
  read the response: an invocation that returns is a complete success, whatever it returns;
- with it, a null response, an empty object, an object without `batchItemFailures`, or a null
  or empty `batchItemFailures` is a complete success. The records each item's `itemIdentifier`
  names failed (an SQS `messageId`, a stream record's sequence number, a Kafka
  `{"topic-partition", "offset"}`). A response that is no JSON object (a plain string, a list),
  a `batchItemFailures` that is no list, and an item whose identifier is missing, null, empty,
  of a bad key name or another shape, or names no record of the batch fail the whole batch.

What comes back after a failure is each source's own: SQS delivers again the messages that
failed (`sqs_acknowledged`); Kafka reads each partition again from its first failed offset
(`kafka_next_offsets`); a stream retries a shard from its lowest failed sequence number
(`stream_first_failure`).

This module needs nothing but the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BatchOutcome",
    "Identifier",
    "batch_outcome",
    "kafka_next_offsets",
    "sqs_acknowledged",
    "stream_first_failure",
]

#: A record's `itemIdentifier`: an SQS `messageId` or a stream record's sequence number (a
#: string), or a Kafka record's `(topic-partition, offset)`.
Identifier = str | tuple[str, int]


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What the event source mapping makes of one invocation of a batch."""

    #: The identifiers that failed, in the batch's order (every one when `whole`; in the
    #: response's order when no batch was given).
    failed: tuple[Identifier, ...]
    #: The whole batch failed: the invocation failed, or its response is malformed.
    whole: bool
    #: Why, in a few words ("acknowledged", "the handler raised", "2 reported",
    #: "malformed: ...", "not read: no ReportBatchItemFailures").
    why: str

    @property
    def complete_success(self) -> bool:
        return not self.failed and not self.whole


def batch_outcome(
    response: Any,
    identifiers: Sequence[Identifier] | None,
    *,
    raised: bool = False,
    reads_response: bool = True,
) -> BatchOutcome:
    """AWS's verdict on a batch of `identifiers` (None: any well-formed identifier counts as in
    the batch) after an invocation that returned `response` (or `raised`), under a mapping that
    reads partial batch responses or not (`reads_response`: `ReportBatchItemFailures`)."""
    batch = tuple(identifiers or ())
    if raised:
        return BatchOutcome(batch, True, "the invocation failed")
    if not reads_response:
        return BatchOutcome((), False, "not read: no ReportBatchItemFailures")
    if response is None:
        return BatchOutcome((), False, "acknowledged")
    if not isinstance(response, Mapping):
        return BatchOutcome(batch, True, f"malformed: a {type(response).__name__}, no object")
    items = response.get("batchItemFailures")
    if items is None or (isinstance(items, list) and not items):
        return BatchOutcome((), False, "acknowledged")
    if not isinstance(items, list):
        return BatchOutcome(batch, True, "malformed: batchItemFailures is no list")
    named: dict[Identifier, None] = {}
    for item in items:
        identifier = _identifier(item.get("itemIdentifier") if isinstance(item, Mapping) else None)
        if identifier is None:
            return BatchOutcome(batch, True, f"malformed: an item {item!r:.80}")
        if identifiers is not None and identifier not in batch:
            return BatchOutcome(batch, True, f"malformed: {identifier!r:.80} is not in the batch")
        named[identifier] = None
    in_order = tuple(i for i in batch if i in named) if identifiers is not None else tuple(named)
    return BatchOutcome(in_order, False, f"{len(named)} reported")


def _identifier(value: Any) -> Identifier | None:
    """A reported `itemIdentifier` as the batch names its records; None when malformed."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, Mapping):
        partition, offset = value.get("topic-partition"), value.get("offset")
        if isinstance(partition, str) and partition and type(offset) is int:
            return (partition, offset)
    return None


def sqs_acknowledged(message_ids: Sequence[str], outcome: BatchOutcome) -> list[str]:
    """The messages the SQS mapping deletes: every one that did not fail."""
    if outcome.whole:
        return []
    failed = set(outcome.failed)
    return [m for m in message_ids if m not in failed]


def kafka_next_offsets(records: Sequence[tuple[str, int]], outcome: BatchOutcome) -> dict[str, int]:
    """Per `topic-partition` of the batch's `(topic-partition, offset)` records: the next offset
    to read, which is the one committed: past the partition's last record, or its first failed
    offset (its first offset when the whole batch failed)."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for partition, offset in records:
        first[partition] = min(first.get(partition, offset), offset)
        last[partition] = max(last.get(partition, offset), offset)
    if outcome.whole:
        return first
    following = {partition: offset + 1 for partition, offset in last.items()}
    for identifier in outcome.failed:
        if isinstance(identifier, tuple):
            partition, offset = identifier
            following[partition] = min(following[partition], offset)
    return following


def stream_first_failure(sequence_numbers: Sequence[str], outcome: BatchOutcome) -> int | None:
    """The index in the batch a shard goes back to (None: every record is done): its lowest
    failed sequence number, the batch's start when the whole batch failed."""
    if outcome.whole:
        return 0
    failed = set(outcome.failed)
    return next((n for n, number in enumerate(sequence_numbers) if number in failed), None)
