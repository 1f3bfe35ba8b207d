"""What an event source mapping gave up on, read from the on-failure record it wrote.

The shapes are AWS's documented samples (tests/fixtures/aws/, README there):

- **Kafka** (MSK or self-managed), SQS or SNS destination: `KafkaBatchInfo.recordsInfo` maps
  `"<topic>-<partition>"` (the topic may hold hyphens: split at the last one) to
  `firstRecordOffset` / `lastRecordOffset` (strings), several partitions in one record, and
  `bootstrapServers` names the cluster. Metadata only: the records are read again from the
  cluster. An S3 destination adds `payload`, the invocation's event as an escaped JSON string;
  a Kafka-topic destination sends one record (`recordInfo`) with `payload` as an object. Where a
  payload holds the records, they are replayed as they are.
- **DynamoDB Streams**: `DDBStreamBatchInfo` names the shard, the first and last sequence
  numbers, the stream and the records' arrival times. Metadata only: the records are read again
  from the stream while it holds them (24 hours).
- **Kinesis Data Streams**: `KinesisBatchInfo`, the same fields for a Kinesis stream. Metadata
  only: the records are read again from the stream while it holds them (its retention).

A record that cannot be replayed whole (offsets that run backwards or are no numbers, a
partition that is no number) becomes a batch with a `problem`: reported and kept, never
dropped. A document that is no on-failure record at all raises `NotAFailureRecord`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class NotAFailureRecord(ValueError):
    """A message or object that is not an event source mapping's on-failure record."""


@dataclass
class KafkaBatch:
    """Offsets `first`..`last` of one partition that a Kafka event source gave up on; `records`
    (Lambda's Kafka record shape) when the destination kept them, else None: read the cluster
    named by `bootstrap_servers`."""

    topic: str
    partition: int
    first: int
    last: int
    origin: str
    condition: str = ""
    bootstrap_servers: str | None = None
    records: list[dict[str, Any]] | None = None
    #: Why the batch cannot be replayed whole (None: it can).
    problem: str | None = None

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition} offsets {self.first}..{self.last}"


@dataclass
class StreamBatch:
    """Sequence numbers `start`..`end` of one shard of a DynamoDB stream that the event source
    gave up on (strings, compared as integers)."""

    shard_id: str
    start: str
    end: str
    stream_arn: str
    origin: str
    condition: str = ""
    first_arrival: str | None = None
    last_arrival: str | None = None
    batch_size: int | None = None
    problem: str | None = None

    @property
    def table(self) -> str:
        return self.stream_arn.split(":table/", 1)[-1].split("/stream/", 1)[0]

    @property
    def label(self) -> str:
        return f"{self.table} stream {self.shard_id} sequence {self.start}..{self.end}"


@dataclass
class KinesisBatch(StreamBatch):
    """Sequence numbers `start`..`end` of one shard of a Kinesis stream that the event source
    gave up on."""

    @property
    def stream_name(self) -> str:
        return self.stream_arn.split(":stream/", 1)[-1]

    @property
    def label(self) -> str:
        return f"Kinesis {self.stream_name} {self.shard_id} sequence {self.start}..{self.end}"


Batch = KafkaBatch | StreamBatch | KinesisBatch


@dataclass
class FailureRecord:
    """One on-failure record: where it came from, and the batches it names."""

    origin: str
    batches: list[Batch] = field(default_factory=list)
    condition: str = ""


def failure_record(document: object, origin: str) -> FailureRecord:
    """The batches an on-failure record names (raises `NotAFailureRecord`)."""
    if not isinstance(document, Mapping):
        raise NotAFailureRecord(f"{origin}: not a JSON object")
    context = document.get("requestContext")
    condition = str(context.get("condition", "")) if isinstance(context, Mapping) else ""
    found = FailureRecord(origin, condition=condition)
    kafka = document.get("KafkaBatchInfo")
    stream = document.get("DDBStreamBatchInfo")
    kinesis = document.get("KinesisBatchInfo")
    if isinstance(kafka, Mapping):
        found.batches.extend(_kafka_batches(kafka, document.get("payload"), origin, condition))
    elif isinstance(stream, Mapping):
        found.batches.append(_stream_batch(stream, origin, condition))
    elif isinstance(kinesis, Mapping):
        found.batches.append(_stream_batch(kinesis, origin, condition, KinesisBatch))
    else:
        raise NotAFailureRecord(
            f"{origin}: no KafkaBatchInfo, DDBStreamBatchInfo or KinesisBatchInfo (not an "
            "on-failure record of a Kafka, DynamoDB Streams or Kinesis event source mapping)"
        )
    if not found.batches:
        raise NotAFailureRecord(f"{origin}: the record names no partition")
    return found


def _kafka_batches(
    info: Mapping[str, Any], payload: object, origin: str, condition: str
) -> list[KafkaBatch]:
    event = _payload_event(payload)
    bootstrap = info.get("bootstrapServers") or (event or {}).get("bootstrapServers")
    servers = str(bootstrap) if bootstrap else None
    if event is not None and isinstance(event.get("records"), Mapping):
        batches = [
            _kafka_kept(topic_partition, records, origin, condition, servers)
            for topic_partition, records in event["records"].items()
            if isinstance(records, list) and records
        ]
        if batches:
            return batches
    ranges = info.get("recordsInfo")
    if isinstance(ranges, Mapping):
        return [
            _kafka_range(topic_partition, offsets, origin, condition, servers)
            for topic_partition, offsets in ranges.items()
        ]
    raise NotAFailureRecord(f"{origin}: KafkaBatchInfo has no recordsInfo and no payload")


def _payload_event(payload: object) -> Mapping[str, Any] | None:
    """The invocation's event a destination kept: an object, or its escaped JSON string (S3)."""
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except json.JSONDecodeError:
            return None
    return payload if isinstance(payload, Mapping) else None


def _split(topic_partition: str) -> tuple[str, int | None]:
    topic, _, partition = str(topic_partition).rpartition("-")
    return (
        (topic, int(partition)) if topic and partition.isdigit() else (str(topic_partition), None)
    )


def _kafka_range(
    topic_partition: str, offsets: object, origin: str, condition: str, servers: str | None
) -> KafkaBatch:
    topic, partition = _split(topic_partition)
    info = offsets if isinstance(offsets, Mapping) else {}
    first, last = _offset(info.get("firstRecordOffset")), _offset(info.get("lastRecordOffset"))
    batch = KafkaBatch(
        topic, partition or 0, first or 0, last or 0, origin, condition, bootstrap_servers=servers
    )
    if partition is None:
        batch.problem = f"{topic_partition!r} is not <topic>-<partition>"
    elif first is None or last is None:
        shown = f"{info.get('firstRecordOffset')!r}..{info.get('lastRecordOffset')!r}"
        batch.problem = f"{topic_partition}: offsets {shown} are not numbers"
    elif first > last:
        batch.problem = f"{topic_partition}: offsets {first}..{last} run backwards"
    return batch


def _kafka_kept(
    topic_partition: str,
    records: list[Any],
    origin: str,
    condition: str,
    servers: str | None,
) -> KafkaBatch:
    topic, partition = _split(topic_partition)
    offsets = [_offset(r.get("offset")) if isinstance(r, Mapping) else None for r in records]
    numbers = [o for o in offsets if o is not None]
    batch = KafkaBatch(
        str(records[0].get("topic", topic)) if isinstance(records[0], Mapping) else topic,
        partition or 0,
        min(numbers, default=0),
        max(numbers, default=0),
        origin,
        condition,
        bootstrap_servers=servers,
        records=[dict(r) for r in records if isinstance(r, Mapping)],
    )
    if partition is None:
        batch.problem = f"{topic_partition!r} is not <topic>-<partition>"
    elif len(numbers) != len(records):
        batch.problem = f"{topic_partition}: a kept record has no offset"
    return batch


def _offset(value: object) -> int | None:
    """An offset as AWS writes it (a string) or as a number; None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _stream_batch(
    info: Mapping[str, Any],
    origin: str,
    condition: str,
    kind: type[StreamBatch] = StreamBatch,
) -> StreamBatch:
    def text(key: str) -> str | None:
        value = info.get(key)
        return str(value) if value not in (None, "") else None

    batch = kind(
        shard_id=text("shardId") or "",
        start=text("startSequenceNumber") or "",
        end=text("endSequenceNumber") or "",
        stream_arn=text("streamArn") or "",
        origin=origin,
        condition=condition,
        first_arrival=text("approximateArrivalOfFirstRecord"),
        last_arrival=text("approximateArrivalOfLastRecord"),
        batch_size=info["batchSize"] if isinstance(info.get("batchSize"), int) else None,
    )
    missing = [
        key
        for key, value in (
            ("shardId", batch.shard_id),
            ("startSequenceNumber", batch.start),
            ("endSequenceNumber", batch.end),
            ("streamArn", batch.stream_arn),
        )
        if not value
    ]
    kinesis = kind is KinesisBatch
    if missing:
        name = "KinesisBatchInfo" if kinesis else "DDBStreamBatchInfo"
        batch.problem = f"{name} lacks {', '.join(missing)}"
    elif not (batch.start.isdigit() and batch.end.isdigit()):
        batch.problem = f"sequence numbers {batch.start}..{batch.end} are not numbers"
    elif int(batch.start) > int(batch.end):
        batch.problem = f"sequence numbers {batch.start}..{batch.end} run backwards"
    elif kinesis and ":kinesis:" not in batch.stream_arn:
        batch.problem = f"{batch.stream_arn!r} is not a Kinesis stream ARN"
    elif not kinesis and (":table/" not in batch.stream_arn or "/stream/" not in batch.stream_arn):
        batch.problem = f"{batch.stream_arn!r} is not a DynamoDB stream ARN"
    return batch
