"""The Kafka (MSK) event source mapping, emulated on librdkafka's mock cluster.

Rules (those of Lambda's Kafka pollers with partial batch responses):
- records are read per partition in offset order, from the consumer group's committed offsets
  (`StartingPosition` TRIM_HORIZON: the earliest record when the group has none);
- a batch holds up to `BatchSize` records gathered within `MaximumBatchingWindowInSeconds`,
  grouped by `"<topic>-<partition>"` in the event shape of AWS's samples
  (tests/fixtures/aws/msk-event.json, self-managed-kafka-event.json): `aws:kafka` with the
  cluster's ARN for MSK, `SelfManagedKafka` without one; `bootstrapServers` names a
  self-managed source's servers as the template configures them, comma-separated as AWS's
  sample does, and an MSK cluster's as the local cluster's (the local stack cannot know MSK's
  brokers); the on-failure records name the local cluster, which `lambda-inbox replay` reads
  back;
- the invocation failed: every partition of the batch is retried from its first offset;
- `batchItemFailures` lists `{"topic-partition", "offset"}` items, the spelling of AWS's page
  ("Configuring error handling controls for Kafka event sources"): each partition is committed
  up to its first failed offset and re-read from it (later records of that partition come
  again); partitions without failures are committed past their last record; an identifier that
  names no record of the batch, or of another spelling, fails the whole batch;
- after `MaximumRetryAttempts` retries of the same position (10 when retries are infinite and
  there is an on-failure destination, as AWS caps them) the batch is given up: one on-failure
  record (`on_failure`) names every partition given up (`recordsInfo`, never the records) and
  the partitions move past them. A batch larger than Lambda's 6 MB payload is never invoked:
  it is given up at once as `MaximumPayloadSizeExceeded`.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..batch_responses import batch_outcome, kafka_next_offsets
from .invoker import Invocation, Invoker
from .loop import PollingLoop
from .on_failure import (
    MAX_PAYLOAD_BYTES,
    MAXIMUM_PAYLOAD_SIZE_EXCEEDED,
    RETRY_ATTEMPTS_EXHAUSTED,
    Destination,
    failure_record,
    iso_millis,
)
from .template import ACCOUNT, REGION, FunctionSpec, KafkaEventSpec

LOCAL_CLUSTER_ARN = f"arn:aws:kafka:{REGION}:{ACCOUNT}:cluster/local/mock"
RETRY_PAUSE_SECONDS = 0.2


@dataclass(frozen=True)
class KafkaRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes
    headers: list[tuple[str, bytes]]

    @property
    def topic_partition(self) -> str:
        return f"{self.topic}-{self.partition}"


def from_message(message: Any) -> KafkaRecord:
    return KafkaRecord(
        topic=message.topic(),
        partition=message.partition(),
        offset=message.offset(),
        timestamp=message.timestamp()[1],
        key=message.key(),
        value=message.value() or b"",
        headers=[(name, value or b"") for name, value in message.headers() or []],
    )


def kafka_event(
    records: Sequence[KafkaRecord], bootstrap: str, spec: KafkaEventSpec
) -> dict[str, Any]:
    """The Lambda event of a batch: MSK's, or a self-managed cluster's."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        raw: dict[str, Any] = {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "timestampType": "CREATE_TIME",
            "value": base64.b64encode(record.value).decode("ascii"),
            "headers": [{name: list(value)} for name, value in record.headers],
        }
        if record.key is not None:
            raw["key"] = base64.b64encode(record.key).decode("ascii")
        grouped.setdefault(record.topic_partition, []).append(raw)
    if spec.self_managed:
        return {
            "eventSource": "SelfManagedKafka",
            "bootstrapServers": ",".join(spec.bootstrap_servers) or bootstrap,
            "records": grouped,
        }
    return {
        "eventSource": "aws:kafka",
        "eventSourceArn": spec.cluster_arn or LOCAL_CLUSTER_ARN,
        "bootstrapServers": bootstrap,
        "records": grouped,
    }


def next_positions(
    records: Sequence[KafkaRecord], invocation: Invocation, report_batch_item_failures: bool
) -> dict[tuple[str, int], int]:
    """Per (topic, partition) of the batch: the next offset to read (= the offset to commit),
    by the rules above (`batch_responses.batch_outcome`)."""
    identifiers = [(record.topic_partition, record.offset) for record in records]
    outcome = batch_outcome(
        invocation.response,
        identifiers,
        raised=invocation.failed,
        reads_response=report_batch_item_failures,
    )
    following = kafka_next_offsets(identifiers, outcome)
    return {
        (record.topic, record.partition): following[record.topic_partition] for record in records
    }


@dataclass
class KafkaStats:
    invocations: int = 0
    records: int = 0
    committed: int = 0
    retried_records: int = 0
    failed_invocations: int = 0
    given_up_batches: int = 0
    errors: list[str] = field(default_factory=list)


class KafkaPoller:
    """Polls the event's topics for one function until `stop()`."""

    def __init__(
        self,
        bootstrap: str,
        function: FunctionSpec,
        event: KafkaEventSpec,
        invoker: Invoker,
        *,
        sqs: Any = None,
        on_failure_url: str | None = None,
        retry_pause: float = RETRY_PAUSE_SECONDS,
    ) -> None:
        from confluent_kafka import Consumer

        self.bootstrap = bootstrap
        self.function = function
        self.event = event
        self.invoker = invoker
        self.destination = Destination(sqs, on_failure_url)
        self.retry_pause = retry_pause
        self.stats = KafkaStats()
        self._attempts: dict[tuple[str, int, int], int] = {}
        self._lag = 1  # unknown until the poller's thread has measured it
        self._loop = PollingLoop(self.label, self._cycle, errors=self.stats.errors)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": event.consumer_group,
                "enable.auto.commit": False,
                "auto.offset.reset": "latest"
                if event.starting_position == "LATEST"
                else "earliest",
            }
        )
        self._assign()

    @property
    def label(self) -> str:
        return f"{','.join(self.event.topics)} -> {self.function.logical_id}"

    def _assign(self) -> None:
        from confluent_kafka import TopicPartition

        partitions = []
        for topic in self.event.topics:
            metadata = self.consumer.list_topics(topic, timeout=10)
            for partition in sorted(metadata.topics[topic].partitions):
                partitions.append(TopicPartition(topic, partition))
        committed = self.consumer.committed(partitions, timeout=10)
        self.consumer.assign(committed)

    def batch(self) -> list[KafkaRecord]:
        """Up to BatchSize records within the batching window (offset order per partition)."""
        records: list[KafkaRecord] = []
        deadline = time.monotonic() + max(self.event.batching_window, 0.05)
        while len(records) < self.event.batch_size and not self._loop.stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for message in self.consumer.consume(
                num_messages=self.event.batch_size - len(records), timeout=min(left, 0.5)
            ):
                if message.error() is None:
                    records.append(from_message(message))
        return records

    def poll_once(self) -> int:
        from confluent_kafka import TopicPartition

        records = self.batch()
        if not records:
            return 0
        event = kafka_event(records, self.bootstrap, self.event)
        size = len(json.dumps(event).encode())
        if size > MAX_PAYLOAD_BYTES:  # never invoked: given up at once
            positions = {(r.topic, r.partition): r.offset + 1 for r in records}
            self._give_up(records, MAXIMUM_PAYLOAD_SIZE_EXCEEDED, 0, size)
        else:
            positions = self._invoke(records, event, size)
        offsets = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
        self.consumer.commit(offsets=offsets, asynchronous=False)
        for offset in offsets:
            self.consumer.seek(offset)
        return len(records)

    def _invoke(
        self, records: Sequence[KafkaRecord], event: dict[str, Any], size: int
    ) -> dict[tuple[str, int], int]:
        """Invoke with the batch; the next position of each partition."""
        invocation = self.invoker.invoke(self.function, event)
        positions = next_positions(records, invocation, self.event.report_batch_item_failures)
        self.stats.invocations += 1
        self.stats.records += len(records)
        if invocation.failed:
            self.stats.failed_invocations += 1
            self.stats.errors.append(str(invocation.error))
        limit = self.event.retry_limit
        given_up: list[KafkaRecord] = []
        retried = False
        for (topic, partition), position in list(positions.items()):
            mine = [r for r in records if (r.topic, r.partition) == (topic, partition)]
            if position <= mine[-1].offset:
                attempt_key = (topic, partition, position)
                self._attempts[attempt_key] = self._attempts.get(attempt_key, 0) + 1
                if limit is not None and self._attempts[attempt_key] > limit:
                    given_up += [r for r in mine if r.offset >= position]
                    positions[(topic, partition)] = mine[-1].offset + 1
                    del self._attempts[attempt_key]
                else:
                    retried = True
                    self.stats.retried_records += sum(1 for r in mine if r.offset >= position)
            self.stats.committed += sum(1 for r in mine if r.offset < positions[(topic, partition)])
        if given_up:
            self._give_up(given_up, RETRY_ATTEMPTS_EXHAUSTED, (limit or 0) + 1, size)
        if retried:
            self._loop.stopping.wait(self.retry_pause)
        return positions

    def _give_up(
        self, records: Sequence[KafkaRecord], condition: str, invocations: int, size: int
    ) -> None:
        """One on-failure record naming every partition of `records` (AWS's
        `KafkaBatchInfo.recordsInfo`: offsets and times as strings)."""
        self.stats.given_up_batches += 1
        ranges: dict[str, dict[str, str]] = {}
        for key in dict.fromkeys(r.topic_partition for r in records):
            mine = [r for r in records if r.topic_partition == key]
            ranges[key] = {
                "firstRecordOffset": str(mine[0].offset),
                "lastRecordOffset": str(mine[-1].offset),
                "firstRecordTimestamp": iso_millis(mine[0].timestamp / 1000),
                "lastRecordTimestamp": iso_millis(mine[-1].timestamp / 1000),
            }
        info: dict[str, Any] = {"batchSize": len(records)}
        if not self.event.self_managed:
            info["eventSourceArn"] = self.event.cluster_arn or LOCAL_CLUSTER_ARN
        info |= {"bootstrapServers": self.bootstrap, "payloadSize": size, "recordsInfo": ranges}
        record = failure_record(
            self.function,
            condition=condition,
            invocations=invocations,
            invoked=condition != MAXIMUM_PAYLOAD_SIZE_EXCEEDED,
        )
        self.destination.send(record | {"KafkaBatchInfo": info})

    def lag(self) -> int:
        """Records not yet committed, over every partition. While the poller runs, the value its
        thread measured after its last batch (a Kafka consumer serves one thread at a time)."""
        if self._loop.running:
            return self._lag
        return self._measure_lag()

    def _measure_lag(self) -> int:
        from confluent_kafka import TopicPartition

        total = 0
        assigned: list[Any] = self.consumer.assignment()
        committed = {
            (tp.topic, tp.partition): tp.offset
            for tp in self.consumer.committed(assigned, timeout=5)
        }
        for tp in assigned:
            low, high = self.consumer.get_watermark_offsets(
                TopicPartition(tp.topic, tp.partition), timeout=5
            )
            position = committed.get((tp.topic, tp.partition), -1)
            total += high - (position if position >= 0 else low)
        return total

    def _cycle(self) -> None:
        self.poll_once()
        self._lag = self._measure_lag()

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()
        self.consumer.close()


def decoded(value: Mapping[str, Any]) -> bytes:
    """The value of an MSK event record."""
    return base64.b64decode(value["value"])
