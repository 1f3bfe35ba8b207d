"""Kinesis Data Streams records as messages, made as they are read (the batch semantics are
`streams`').

A record's message is its base64 `data`, read as JSON or through `ValueFormats`. A record the
Kinesis Producer Library aggregated (`aggregation`) is one message per user record: delivery id
`"<eventID>/<index>"`, its own partition key, the parent's sequence number to report. An
aggregate can hold 150,000 user records in 1 MB, so `KinesisBatch` makes each message only when
it is read, and a consumer takes them a chunk at a time (`process_in_chunks`), never holding
them all. An
aggregate larger than a chunk resumes where an earlier invocation got to (`AggregateProgress`):
its user records before that point all settled then. What cannot be read becomes a message the
inbox dead-letters; only a record without a sequence number (which no response could name)
fails the invocation, as `MalformedRecord`, found before any message is made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any, Protocol

from lambda_inbox._errors import ErrorCode, MalformedRecord
from lambda_inbox._messages import AttributeValue, InboundMessage
from lambda_inbox._outcomes import DEADLINE_DETAIL, MessageResult, Outcome
from lambda_inbox._sources.fields import KPL_MAGIC, base64_bytes, raw_text, string_attribute
from lambda_inbox._sources.streams import numbered, required_text, stream_records, text_or_none

if TYPE_CHECKING:
    from lambda_inbox._internal.deadline import Deadline
    from lambda_inbox._sources.values import ValueFormats


def process_in_chunks(
    process: Callable[[list[InboundMessage], Deadline], list[MessageResult]],
    messages: Iterable[InboundMessage],
    deadline: Deadline,
    size: int,
    after_chunk: Callable[[], None] | None = None,
) -> list[MessageResult]:
    """The messages of one shard's batch, made and processed `size` at a time, each chunk
    through the whole model (`process`: its read, commit and report) under the invocation's
    deadline; the results of the messages to redeliver. Memory holds one chunk, each chunk that
    finishes is progress, and the invocation stops between chunks: at the deadline, or before
    it when less time is left than the last chunk took (a chunk begun then would be cut short
    and run past the deadline by what is not checked inside it). A shard is one ordering scope,
    so the first chunk with a record to redeliver is the last one started: its failures name
    where Lambda retries from (an aggregate's own sequence number). `after_chunk` runs after
    each chunk that finished whole (`KinesisBatch.keep_progress`)."""
    remaining = iter(messages)
    took: float | None = None  # seconds the last chunk took
    while chunk := list(islice(remaining, size)):
        left = deadline.left()
        if took is not None and left is not None and left < took:
            code, detail = ErrorCode.DEADLINE, DEADLINE_DETAIL
            return [MessageResult(chunk[0], Outcome.FAILED, None, code, detail)]
        started = deadline.clock.monotonic()
        unfinished = [
            result for result in process(chunk, deadline) if result.outcome.needs_redelivery
        ]
        if unfinished:
            return unfinished
        if after_chunk is not None:
            after_chunk()
        took = deadline.clock.monotonic() - started
    return []


def parse_kinesis_event(
    event: Mapping[str, Any],
    formats: ValueFormats | None = None,
    seen: dict[str, int] | None = None,
) -> list[InboundMessage]:
    """The event's records as messages, in delivery order, all of them (`KinesisBatch`).
    `seen` maps each shard to the highest sequence number received before in this execution
    environment: a record at or below it is `redelivered` (a retried batch). It is updated with
    this batch."""
    return list(KinesisBatch(event, formats, seen))


#: Messages of a Kinesis batch processed together (`process_in_chunks`): a batch read of ten
#: `BatchGetItem`s, ten full transactions.
CHUNK_MESSAGES = 1_000


class AggregateProgress(Protocol):
    """How far into a large aggregate earlier invocations got (`store.progress`)."""

    #: Aggregates of more user records than this resume (one chunk's worth).
    resumes_above: int

    def start(self, parent_id: str) -> int:
        """The index of the first user record of aggregate `parent_id` not yet settled."""
        ...

    def keep(self, parent_id: str, next_index: int) -> None:
        """Every user record of the aggregate before `next_index` has settled."""
        ...


class KinesisBatch:
    """The messages of a Kinesis event, in delivery order, made as they are iterated (once).
    `seen` as for `parse_kinesis_event`; `progress` says where a large aggregate
    resumes. `cursor` is `(eventID, index)` while the last message read is a user record of a
    large aggregate with more after it: the next one's place, for `progress` to keep."""

    def __init__(
        self,
        event: Mapping[str, Any],
        formats: ValueFormats | None = None,
        seen: dict[str, int] | None = None,
        progress: AggregateProgress | None = None,
    ) -> None:
        self._records = stream_records(event)
        for index, record in enumerate(self._records):
            if not isinstance(record, dict) or not isinstance(record.get("kinesis"), dict):
                raise MalformedRecord(f"Kinesis record {index} has no 'kinesis' object")
            required_text(record["kinesis"].get("sequenceNumber"), f"Kinesis record {index}")
        self._formats = formats
        self._seen = seen
        self._progress = progress
        self.cursor: tuple[str, int] | None = None

    def __iter__(self) -> Iterator[InboundMessage]:
        return numbered(self._messages(), self._seen)

    def keep_progress(self) -> None:
        """The messages read so far have all settled: when they end part-way through a large
        aggregate, `progress` keeps where its next user record is."""
        if self.cursor is not None and self._progress is not None:
            self._progress.keep(*self.cursor)

    def _messages(self) -> Iterator[InboundMessage]:
        for index, record in enumerate(self._records):
            yield from self._record_messages(record, index)

    def _record_messages(self, record: dict[str, Any], index: int) -> Iterator[InboundMessage]:
        kinesis: dict[str, Any] = record["kinesis"]
        sequence_number: str = kinesis["sequenceNumber"]
        event_id = record.get("eventID")
        shard = event_id.split(":", 1)[0] if isinstance(event_id, str) and ":" in event_id else ""
        delivery_id = event_id if isinstance(event_id, str) and event_id else sequence_number
        stream = text_or_none(record.get("eventSourceARN")) or "kinesis"
        coordinates: dict[str, AttributeValue] = {
            "kinesis-sequence-number": string_attribute(sequence_number),
        }
        if shard:
            coordinates["kinesis-shard-id"] = string_attribute(shard)
        raw = kinesis.get("data")
        data = base64_bytes(raw)
        place: dict[str, Any] = {
            "item_identifier": sequence_number,
            "source": stream,
            "sequence": index,
            "ordering_scope": f"{stream}#{shard}" if shard else stream,
        }
        dead_letter = {**coordinates, **_partition_key(text_or_none(kinesis.get("partitionKey")))}
        self.cursor = None
        if data is None:
            text, reason = raw_text(raw), "data is not valid base64"
            yield _poison(delivery_id, text, reason, dead_letter, place)
        elif data.startswith(KPL_MAGIC):
            from lambda_inbox._sources.aggregation import BadAggregate, deaggregate

            try:
                users = deaggregate(data)
                count = len(users)
                large = self._progress is not None and count > self._progress.resumes_above
                start = self._progress.start(delivery_id) if large and self._progress else 0
                if start == 0:  # resumed, it was checked by the invocation that began it
                    users.check_keys()
            except BadAggregate as error:
                yield _poison(delivery_id, data, str(error), dead_letter, place)
                return
            for position, user in enumerate(users.records(start), start):
                self.cursor = (
                    (delivery_id, position + 1) if large and position + 1 < count else None
                )
                attributes = {**coordinates, **_partition_key(user.partition_key, position)}
                user_id = f"{delivery_id}/{position}"
                yield _kinesis_message(user_id, user.data, attributes, self._formats, place)
        else:
            yield _kinesis_message(delivery_id, data, dead_letter, self._formats, place)


def _poison(
    delivery_id: str,
    body: bytes,
    reason: str,
    dead_letter: dict[str, AttributeValue],
    place: dict[str, Any],
) -> InboundMessage:
    """A record that cannot be read, kept as delivered: poison when handled."""
    return InboundMessage(
        delivery_id=delivery_id,
        body=body,
        decode_error=reason,
        dead_letter_attributes=dead_letter,
        **place,
    )


def _partition_key(key: str | None, position: int | None = None) -> dict[str, AttributeValue]:
    """The dead-letter attributes naming a record's partition key (and its place in an
    aggregate)."""
    attributes = {"kinesis-partition-key": string_attribute(key)} if key else {}
    if position is not None:
        attributes["kinesis-aggregate-index"] = string_attribute(str(position))
    return attributes


def _kinesis_message(
    delivery_id: str,
    data: bytes,
    dead_letter: dict[str, AttributeValue],
    formats: ValueFormats | None,
    place: dict[str, Any],
) -> InboundMessage:
    reading: dict[str, Any] = {}
    if formats is not None or data[:1] == b"\x00":
        from lambda_inbox._sources.values import read_value  # JSON-only consumers never load it

        reading = read_value(data, None, formats, dead_letter)
    return InboundMessage(
        delivery_id=delivery_id, body=data, dead_letter_attributes=dead_letter, **place, **reading
    )
