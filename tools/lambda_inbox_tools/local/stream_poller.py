"""The DynamoDB Streams event source mapping, emulated on a real table's stream (DynamoDB Local
serves the Streams API on its own endpoint; so does moto); `ShardPoller` holds the rules it
shares with the Kinesis one (`kinesis_poller`).

Rules (those of Lambda's stream pollers), per shard, in order:
- read up to `BatchSize` records from the shard's position; records no `FilterCriteria` pattern
  matches are passed over as processed;
- invoke the function with the Lambda DynamoDB event (images as the Streams API gives them,
  binary values base64, `ApproximateCreationDateTime` in epoch seconds);
- success: the position moves past the batch. With `ReportBatchItemFailures`, a response naming
  records (`itemIdentifier` = their `SequenceNumber`) moves it to the first one named, and the
  rest of the batch is read again; an identifier not in the batch fails the whole batch;
- a failed invocation (error, timeout, crash) retries the batch; with `BisectBatchOnFunctionError`
  the batch is split in two and each half retried on its own (a split is not a retry);
- after `MaximumRetryAttempts` retries of the same first record the batch is given up: its
  description goes to the on-failure destination in the shape of AWS's sample
  (tests/fixtures/aws/dynamodb-streams-on-failure.json: shard, sequence numbers, arrival times,
  the stream; never the records) and the shard moves on. Without a limit the shard waits for
  its records forever (in AWS, until they expire after 24 hours). `MaximumRecordAgeInSeconds`
  is not emulated: locally no record is ever too old.

Every read starts from an iterator made for it (TRIM_HORIZON until a record was read, then
AFTER_SEQUENCE_NUMBER of the last one read), never from a previous answer's
`NextShardIterator`: DynamoDB Local numbers stream records across all its tables, and the next
iterator of an empty read points past the shard (`TrimmedDataAccessException`) as soon as a
second table has a stream. A `LATEST` shard first reads to its end and starts after it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from ..batch_responses import batch_outcome, stream_first_failure
from ..lambda_records import lambda_stream_record
from .event_filter import passes
from .invoker import Invoker
from .loop import PollingLoop
from .on_failure import (
    RECORD_AGE_EXCEEDED,
    RETRY_ATTEMPTS_EXHAUSTED,
    Destination,
    failure_record,
    iso_seconds,
)
from .template import ACCOUNT, REGION, FunctionSpec, KinesisEventSpec, StreamEventSpec

#: GetRecords' largest page.
PAGE_SIZE = 1000


def sequence_number(record: Mapping[str, Any]) -> str:
    """The sequence number of a Lambda Kinesis record, or of a DynamoDB stream record (Lambda's
    or the Streams API's)."""
    if "kinesis" in record:
        return str(record["kinesis"]["sequenceNumber"])
    return str(record["dynamodb"]["SequenceNumber"])


@dataclass
class StreamStats:
    invocations: int = 0
    records: int = 0
    filtered_out: int = 0
    failed_invocations: int = 0
    retried_records: int = 0
    given_up_batches: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class _Shard:
    #: The sequence number of the last record read: where the next read starts after.
    last_read: str | None = None
    #: Records read and not yet done, in order (a retried batch is read again from here).
    pending: list[dict[str, Any]] = field(default_factory=list)
    attempts: int = 0
    #: Set by a bisected failure: how many of `pending` the next invocation takes.
    window: int | None = None


class ShardPoller:
    """Polls the shards of one stream for one function event until `stop()`: the batching,
    retry, bisect and give-up rules of the module docstring. A subclass reads its stream."""

    #: The key of the on-failure record's batch description.
    BATCH_INFO = "DDBStreamBatchInfo"
    #: The pause after a cycle that found nothing: Lambda polls a DynamoDB stream's shards four
    #: times a second.
    IDLE_PAUSE_SECONDS = 0.25

    def __init__(
        self,
        function: FunctionSpec,
        event: StreamEventSpec | KinesisEventSpec,
        invoker: Invoker,
        *,
        event_source_arn: str,
        sqs: Any = None,
        on_failure_url: str | None = None,
        retry_pause: float = 0.2,
        scale: float = 1.0,
    ) -> None:
        self.function, self.event, self.invoker = function, event, invoker
        #: Records older than this many seconds are discarded (None: never).
        self.maximum_age = (
            None if event.maximum_record_age is None else event.maximum_record_age * scale
        )
        #: The ARN the function sees in its records and the on-failure record names.
        self.event_source_arn = event_source_arn
        self.destination = Destination(sqs, on_failure_url)
        self.retry_pause = retry_pause
        self.stats = StreamStats()
        self._shards: dict[str, _Shard] = {}
        self._idle = False
        self._loop = PollingLoop(self.label, self._cycle, errors=self.stats.errors)

    # ---- the stream, read by a subclass

    @property
    def label(self) -> str:
        raise NotImplementedError

    def _shard_ids(self) -> list[str]:
        raise NotImplementedError

    def _page(self, shard_id: str, after: str | None) -> list[dict[str, Any]]:
        """The shard's records after sequence number `after` (from its start when None), as the
        stream's API gives them, one page."""
        raise NotImplementedError

    def _lambda_record(self, raw: Mapping[str, Any], shard_id: str) -> dict[str, Any]:
        raise NotImplementedError

    def _raw_sequence(self, raw: Mapping[str, Any]) -> str:
        return sequence_number(raw)

    def _arrival(self, record: Mapping[str, Any]) -> float:
        """When a Lambda record reached the stream, in epoch seconds."""
        raise NotImplementedError

    # ---- the rules

    def _discover(self) -> None:
        for shard_id in self._shard_ids():
            if shard_id not in self._shards:
                found = _Shard()
                if self.event.starting_position == "LATEST":
                    while page := self._page(shard_id, found.last_read):
                        found.last_read = self._raw_sequence(page[-1])
                self._shards[shard_id] = found

    def _fill(self, shard_id: str, shard: _Shard) -> None:
        # Pages as large as the API allows: most records may be filtered out, and records read
        # beyond the batch wait in `pending` for the next one.
        while len(shard.pending) < self.event.batch_size:
            found = self._page(shard_id, shard.last_read)
            if not found:
                return
            for record in found:
                shard.last_read = self._raw_sequence(record)
                converted = self._lambda_record(record, shard_id)
                if passes(self.event.filters, converted):
                    shard.pending.append(converted)
                else:
                    self.stats.filtered_out += 1

    def poll_once(self) -> int:
        """One batch per shard that has records; returns the number of records invoked with."""
        self._discover()
        invoked = 0
        for shard_id, shard in self._shards.items():
            self._fill(shard_id, shard)
            if shard.pending:
                invoked += self._deliver(shard_id, shard)
        self._idle = invoked == 0
        return invoked

    def _deliver(self, shard_id: str, shard: _Shard) -> int:
        expired = self._expired(shard.pending)
        if expired:
            self._give_up(shard_id, shard.pending[:expired], RECORD_AGE_EXCEEDED, shard.attempts)
            del shard.pending[:expired]
            shard.attempts, shard.window = 0, None
            return expired
        batch = shard.pending[: shard.window or self.event.batch_size]
        invocation = self.invoker.invoke(self.function, {"Records": batch})
        self.stats.invocations += 1
        self.stats.records += len(batch)
        if invocation.failed:
            self.stats.failed_invocations += 1
            self.stats.errors.append(str(invocation.error))
            done = 0
            if self.event.bisect_on_error and len(batch) > 1:
                shard.window = len(batch) // 2
        else:
            numbers = [sequence_number(r) for r in batch]
            outcome = batch_outcome(
                invocation.response,
                numbers,
                reads_response=self.event.report_batch_item_failures,
            )
            failed_at = stream_first_failure(numbers, outcome)
            done = len(batch) if failed_at is None else failed_at
            if failed_at is None and shard.window is not None:
                shard.window = None  # the half went through: the next read is whole again
        if done:
            del shard.pending[:done]
            shard.attempts = 0
            return len(batch)
        if invocation.failed and self.event.bisect_on_error and len(batch) > 1:
            return len(batch)  # a split does not count against the retry quota
        shard.attempts += 1
        limit = self.event.maximum_retry_attempts
        if limit is not None and shard.attempts > limit:
            self._give_up(shard_id, batch, RETRY_ATTEMPTS_EXHAUSTED, limit + 1)
            del shard.pending[: len(batch)]
            shard.attempts, shard.window = 0, None
        else:
            self.stats.retried_records += len(batch)
            self._loop.stopping.wait(self.retry_pause)
        return len(batch)

    def _expired(self, records: Sequence[Mapping[str, Any]]) -> int:
        """How many records from the start are older than the maximum age."""
        if self.maximum_age is None:
            return 0
        oldest_kept = time.time() - self.maximum_age
        count = 0
        for record in records:
            if self._arrival(record) >= oldest_kept:
                break
            count += 1
        return count

    def _give_up(
        self,
        shard_id: str,
        batch: Sequence[Mapping[str, Any]],
        condition: str,
        invocations: int,
    ) -> None:
        record = failure_record(
            self.function,
            condition=condition,
            invocations=invocations,
            invoked=invocations > 0,
        )
        record[self.BATCH_INFO] = {
            "shardId": shard_id,
            "startSequenceNumber": sequence_number(batch[0]),
            "endSequenceNumber": sequence_number(batch[-1]),
            "approximateArrivalOfFirstRecord": iso_seconds(self._arrival(batch[0])),
            "approximateArrivalOfLastRecord": iso_seconds(self._arrival(batch[-1])),
            "batchSize": len(batch),
            "streamArn": self.event_source_arn,
        }
        self.destination.send(record)
        self.stats.given_up_batches += 1  # counted once its record is written

    def pending(self) -> int:
        """Records read and not yet done; 1 more while the last cycle still found records."""
        waiting = sum(len(s.pending) for s in self._shards.values())
        return waiting + (0 if self._idle else 1)

    def _cycle(self) -> None:
        if not self.poll_once():
            self._loop.stopping.wait(self.IDLE_PAUSE_SECONDS)

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()


class StreamPoller(ShardPoller):
    """Polls one table's stream for one function event until `stop()`."""

    def __init__(
        self,
        dynamodb: Any,
        streams: Any,
        function: FunctionSpec,
        event: StreamEventSpec,
        invoker: Invoker,
        *,
        sqs: Any = None,
        on_failure_url: str | None = None,
        retry_pause: float = 0.2,
        scale: float = 1.0,
    ) -> None:
        self.dynamodb, self.streams = dynamodb, streams
        self.table_name = event.table_name
        self.stream_arn = self._latest_stream_arn()
        super().__init__(
            function,
            event,
            invoker,
            # The template's region and account, the stream's label.
            event_source_arn=f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{event.table_name}/"
            "stream/" + self.stream_arn.rsplit("/stream/", 1)[1],
            sqs=sqs,
            on_failure_url=on_failure_url,
            retry_pause=retry_pause,
            scale=scale,
        )

    @property
    def label(self) -> str:
        return f"{self.table_name} stream -> {self.function.logical_id}"

    def _latest_stream_arn(self) -> str:
        table = self.dynamodb.describe_table(TableName=self.table_name)["Table"]
        arn = table.get("LatestStreamArn")
        if not arn:
            raise RuntimeError(f"table {self.table_name} has no stream (StreamSpecification)")
        return str(arn)

    def _shard_ids(self) -> list[str]:
        shards = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        return [str(shard["ShardId"]) for shard in shards.get("Shards", [])]

    def _page(self, shard_id: str, after: str | None) -> list[dict[str, Any]]:
        """The shard's records after `after` (from its start when None), one page."""
        if after is None:
            position: dict[str, str] = {"ShardIteratorType": "TRIM_HORIZON"}
        else:
            position = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": after}
        for attempt in (1, 2):
            iterator = self.streams.get_shard_iterator(
                StreamArn=self.stream_arn, ShardId=shard_id, **position
            )["ShardIterator"]
            try:
                page: list[dict[str, Any]] = self.streams.get_records(
                    ShardIterator=iterator, Limit=PAGE_SIZE
                ).get("Records", [])
                return page
            except ClientError as error:
                # DynamoDB Local: a TRIM_HORIZON iterator made while the shard was empty is
                # "trimmed" once its first record arrives. A new one reads it.
                code = error.response.get("Error", {}).get("Code")
                if after is not None or code != "TrimmedDataAccessException" or attempt == 2:
                    raise
        return []

    def _lambda_record(self, raw: Mapping[str, Any], shard_id: str) -> dict[str, Any]:
        return lambda_stream_record(raw, self.event_source_arn)

    def _arrival(self, record: Mapping[str, Any]) -> float:
        return float(record["dynamodb"].get("ApproximateCreationDateTime") or 0)
