"""What a DynamoDB Streams event source gave up on, read again: the outbox items in it (the
relay), or its records (an inbox consumer of the stream, `StreamReader.records`).

An on-failure record of a stream (`DDBStreamBatchInfo`) holds no records: they are read again
from the stream, from the first sequence number to the last, while the stream still holds them
(24 hours). Only `INSERT` records of outbox items count, as for the relay itself
(`lambda_inbox.OutboxRelay`). Past that, the items themselves may still be in their table (until
their TTL): every outbox item written while the batch's records arrived (the record's
`approximateArrivalOf...` times, widened by `ARRIVAL_SLACK_SECONDS`), a superset at worst,
which the receiver's inbox absorbs.

Each page is read from an iterator made for it (`AT_SEQUENCE_NUMBER` / `AFTER_SEQUENCE_NUMBER`),
never from a previous answer's `NextShardIterator`: DynamoDB Local numbers stream records across
tables, and its next iterators point past the shard.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from lambda_inbox.store import (
    OutboxMessage,
    epoch_of,
    outbox_message_of,
    outbox_messages_written,
)

from .failures import StreamBatch

#: How far before the first and after the last arrival the table fallback looks.
ARRIVAL_SLACK_SECONDS = 60
PAGE = 1000
_GONE = ("TrimmedDataAccessException", "ResourceNotFoundException", "ExpiredIteratorException")


@dataclass
class StreamRead:
    """The outbox messages of a batch, where they were found, and what could not be read."""

    messages: list[OutboxMessage] = field(default_factory=list)
    #: "stream" or "table"
    found_in: str = "stream"
    #: Records that are no outbox item or no INSERT (ignored, as the relay ignores them).
    ignored: int = 0
    #: Why the batch could not be read whole (None: it was).
    problem: str | None = None


class StreamReader:
    """Reads stream batches back (`streams`: a DynamoDB Streams client; `dynamodb`: the
    table's, for the fallback)."""

    def __init__(self, streams: Any, dynamodb: Any) -> None:
        self.streams = streams
        self.dynamodb = dynamodb

    def read(self, batch: StreamBatch) -> StreamRead:
        records, gone = self._held(batch)
        if gone is not None or not records:
            return self._from_table(batch, gone or "the stream no longer holds them")
        found = StreamRead()
        for record in records:
            message = self._message(record, found)
            if message is not None:
                found.messages.append(message)
        return found

    def records(self, batch: StreamBatch) -> tuple[list[dict[str, Any]], str | None]:
        """Every record of the batch as the Streams API gives it, and why not all of them
        could be read (None: they could), for a consumer of the stream's records."""
        records, gone = self._held(batch)
        if gone is not None:
            return [], gone
        numbers = [str(record["dynamodb"]["SequenceNumber"]) for record in records]
        if not numbers or numbers[0] != batch.start or numbers[-1] != batch.end:
            return records, (
                f"the stream holds {len(numbers)} of its records: past its 24 hours, or resharded"
            )
        return records, None

    def _held(self, batch: StreamBatch) -> tuple[list[dict[str, Any]], str | None]:
        """The records the stream still holds of the batch, or why it holds none (the stream
        or its shard gone, the range trimmed)."""
        try:
            return self._records(batch), None
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code not in _GONE:
                raise
            return [], f"the stream no longer holds them ({code})"

    def _stream_arn(self, batch: StreamBatch) -> str:
        """The record's stream, or the table's stream of the same label where the endpoint
        knows it under another ARN (DynamoDB Local's own region and account)."""
        try:
            self.streams.describe_stream(StreamArn=batch.stream_arn, Limit=1)
            return batch.stream_arn
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
            missing = error
        table = self.dynamodb.describe_table(TableName=batch.table)["Table"]
        latest = str(table.get("LatestStreamArn", ""))
        label = batch.stream_arn.rsplit("/stream/", 1)[-1]
        if not latest.endswith(f"/stream/{label}"):
            raise missing
        return latest

    def _records(self, batch: StreamBatch) -> list[dict[str, Any]]:
        arn = self._stream_arn(batch)
        end = int(batch.end)
        found: list[dict[str, Any]] = []
        kind, position = "AT_SEQUENCE_NUMBER", batch.start
        while True:
            iterator = self.streams.get_shard_iterator(
                StreamArn=arn,
                ShardId=batch.shard_id,
                ShardIteratorType=kind,
                SequenceNumber=position,
            )["ShardIterator"]
            page = self.streams.get_records(ShardIterator=iterator, Limit=PAGE).get("Records", [])
            if not page:
                return found
            for record in page:
                number = str(record["dynamodb"]["SequenceNumber"])
                if int(number) > end:
                    return found
                found.append(record)
            kind, position = "AFTER_SEQUENCE_NUMBER", str(page[-1]["dynamodb"]["SequenceNumber"])

    @staticmethod
    def _message(record: Mapping[str, Any], found: StreamRead) -> OutboxMessage | None:
        image = (record.get("dynamodb") or {}).get("NewImage")
        if record.get("eventName") != "INSERT" or not isinstance(image, Mapping):
            found.ignored += 1
            return None
        message = outbox_message_of(image)
        if message is None:
            found.ignored += 1
        return message

    def _from_table(self, batch: StreamBatch, why: str) -> StreamRead:
        found = StreamRead(found_in="table")
        first, last = epoch_of(batch.first_arrival), epoch_of(batch.last_arrival)
        if first is None or last is None:
            found.problem = f"{why}, and the record has no arrival times to find them in the table"
            return found
        found.messages.extend(
            outbox_messages_written(
                self.dynamodb,
                batch.table,
                since=first - ARRIVAL_SLACK_SECONDS,
                until=last + ARRIVAL_SLACK_SECONDS,
            )
        )
        found.messages.sort(key=lambda m: (m.created_at, m.message_id))
        if not found.messages:
            found.problem = f"{why}, and the table holds no outbox item written then"
        return found
