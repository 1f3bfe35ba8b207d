"""One replay run: the failure records of an on-failure destination (an SQS queue, or S3
objects), each batch they name read again and sent to a queue that feeds the same consumer.

- A Kafka batch's records (kept by the destination, else read from the cluster the record names
  or `--bootstrap-servers`) go in the library's dead-letter envelope
  (`lambda_inbox.wire.send_message_request`): the consumer reads them exactly as from Kafka, and its
  inbox makes a record that committed before a no-op.
- A DynamoDB stream batch's outbox items (`streams`) go as the outbox relay sends them (its
  senders, `lambda_inbox.wire.sender_for`: body, attributes, their fixed message id) to
  the destination queue, or to the SNS topic or EventBridge bus `outbox_to` names; the
  receiver's inbox dedupes them. Only outbox items can go to a topic or a bus. With `stream_records`, for an inbox consumer of the stream, its records
  go instead, in the dead-letter envelope: the record's JSON, its coordinates and its `eventID`
  as `idempotency-key`; the SQS adapter reads such a message as the stream consumer reads the
  record.
- A Kinesis batch's records (`kinesis`, read again from the stream) go in the dead-letter
  envelope too: the data's bytes, the record's coordinates, and its `eventID` as
  `idempotency-key`, so that a consumer without a business key sees the record under the key of
  its first delivery.

An SQS failure record is deleted only once every batch it names was replayed whole; anything
else (a problem, a filter, an interrupted run) makes it visible again at once for the next run.
S3 objects are never deleted. Clusters are checked before anything is received (`check_queue`
peeks at the first records without hiding them).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection, Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lambda_inbox import InboundMessage
from lambda_inbox.wire import (
    IDEMPOTENCY_KEY_ATTRIBUTE,
    Destination,
    Sender,
    chunks,
    parse_dynamodb_stream_event,
    parse_kafka_event,
    parse_kinesis_event,
    send_message_request,
    sender_for,
)

from ..lambda_records import lambda_stream_record
from .cluster import Auth, ClusterError, ClusterReader
from .failures import (
    FailureRecord,
    KafkaBatch,
    KinesisBatch,
    NotAFailureRecord,
    StreamBatch,
    failure_record,
)
from .kinesis import KinesisReader
from .report import Kept, ReplayReport, counted
from .streams import StreamReader

#: `inbox-error-code` of a replayed Kafka record: why it is in the queue (not an error of its own).
REPLAY_CODE = "kafka_replay"
#: The same, for a replayed Kinesis record, and a replayed DynamoDB stream record.
KINESIS_REPLAY_CODE = "kinesis_replay"
STREAM_REPLAY_CODE = "dynamodb_stream_replay"
_FILTERED = "filtered"


class Clusters:
    """One reader per cluster for the run; a cluster that cannot be reached is remembered, so
    it is one line however many batches name it. `override` (`--bootstrap-servers`) replaces
    the cluster every record names."""

    def __init__(
        self, override: str | None, *, auth: Auth = "none", region: str | None = None
    ) -> None:
        self.override = override
        self.auth, self.region = auth, region
        self._readers: dict[str, ClusterReader] = {}
        self.unreachable: dict[str, ClusterError] = {}

    def bootstrap_of(self, batch: KafkaBatch) -> str | None:
        return self.override or batch.bootstrap_servers

    def reader(self, bootstrap: str) -> ClusterReader:
        if bootstrap in self.unreachable:
            raise self.unreachable[bootstrap]
        if bootstrap not in self._readers:
            reader = ClusterReader(bootstrap, auth=self.auth, region=self.region)
            try:
                reader.check()
            except ClusterError as error:
                reader.close()
                self.unreachable[bootstrap] = error
                raise
            self._readers[bootstrap] = reader
        return self._readers[bootstrap]

    def close(self) -> None:
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()


class Replay:
    """One run (see the module). `stop` ends it between two failure records (SIGINT, SIGTERM);
    `on_progress` gets a line per batch."""

    def __init__(
        self,
        sqs: Any,
        destination_url: str,
        *,
        clusters: Clusters,
        streams: StreamReader | None = None,
        kinesis: KinesisReader | None = None,
        stream_records: bool = False,
        topics: Collection[str] = (),
        partitions: Collection[int] = (),
        dry_run: bool = False,
        stop: threading.Event | None = None,
        on_progress: Callable[[str], None] = lambda line: None,
        outbox_to: Sender | None = None,
    ) -> None:
        self._sqs = sqs
        self._destination = destination_url
        self._outbox_to = outbox_to or sender_for(Destination("sqs", destination_url), sqs)
        self.clusters = clusters
        self._streams = streams
        self._kinesis = kinesis
        self._stream_records = stream_records
        self._topics, self._partitions = set(topics), set(partitions)
        self._stop = stop or threading.Event()
        self._progress = on_progress
        self.report = ReplayReport(dry_run=dry_run)

    # ---- sources ---------------------------------------------------------------------------

    def check_queue(self, queue_url: str) -> None:
        """Before receiving anything: peek at the queue's first records (received with no
        visibility timeout, so nothing is hidden) and reach every cluster they name."""
        answer = self._sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0, WaitTimeSeconds=0
        )
        for message in answer.get("Messages", []):
            try:
                record = failure_record(_json(message.get("Body", "")), "peek")
            except NotAFailureRecord:
                continue
            for batch in record.batches:
                if isinstance(batch, KafkaBatch) and batch.records is None and not batch.problem:
                    bootstrap = self.clusters.bootstrap_of(batch)
                    if bootstrap:
                        self.clusters.reader(bootstrap)  # raises ClusterError

    def from_queue(self, queue_url: str, *, visibility_timeout: int = 300, wait: int = 1) -> None:
        """Replay every failure record of an SQS on-failure destination."""
        elsewhere = self._in_flight(queue_url)
        release: list[str] = []
        try:
            for message in self._received(queue_url, visibility_timeout, wait):
                self.report.received += 1
                if self._stop.is_set():  # received, not looked at: the next run's
                    self.report.untouched += 1
                    release.append(message["ReceiptHandle"])
                    continue
                origin = f"sqs message {message['MessageId']}"
                if self._replay(origin, message.get("Body", "")) and not self.report.dry_run:
                    self._sqs.delete_message(
                        QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"]
                    )
                else:
                    release.append(message["ReceiptHandle"])
        finally:
            for receipt in release:  # visible again for the next run
                self._sqs.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=receipt, VisibilityTimeout=0
                )
            self.clusters.close()
        self.report.interrupted = self._stop.is_set()
        if elsewhere:
            self.report.in_flight = self._in_flight(queue_url)

    def from_bucket(self, s3: Any, bucket: str, prefix: str) -> None:
        """Replay every on-failure record object of an S3 destination (left in place)."""
        try:
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
                for entry in page.get("Contents", []):
                    if self._stop.is_set():
                        self.report.interrupted = True
                        return
                    self.report.received += 1
                    body = s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read()
                    self._replay(f"s3://{bucket}/{entry['Key']}", body)
        finally:
            self.clusters.close()

    def _received(self, queue_url: str, visibility_timeout: int, wait: int) -> Iterator[Any]:
        while True:
            answer = self._sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=10,
                VisibilityTimeout=visibility_timeout,
                WaitTimeSeconds=wait,
            )
            messages = answer.get("Messages", [])
            if not messages:
                return
            yield from messages

    def _in_flight(self, queue_url: str) -> int:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        return int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0"))

    # ---- one failure record ----------------------------------------------------------------

    def _replay(self, origin: str, body: str | bytes) -> bool:
        """True when every batch of the record was replayed whole (so it can be deleted)."""
        try:
            record = failure_record(_json(body), origin)
        except NotAFailureRecord as problem:
            self._keep(origin, str(problem).removeprefix(f"{origin}: "))
            return False
        reasons = [self._batch(record, batch) for batch in record.batches]
        problems = [r for r in reasons if r not in (None, _FILTERED)]
        if problems:
            self._keep(origin, "; ".join(str(p) for p in problems))
            return False
        if _FILTERED in reasons:
            self.report.kept.append(Kept(origin, "filtered out by --topic/--partition", True))
            return False
        self.report.replayed += 1
        return True

    def _keep(self, origin: str, reason: str) -> None:
        self.report.kept.append(Kept(origin, reason))

    def _batch(
        self, record: FailureRecord, batch: KafkaBatch | StreamBatch | KinesisBatch
    ) -> str | None:
        """None when the batch was replayed whole, `_FILTERED`, or what kept it."""
        self.report.batches += 1
        if batch.problem:
            return batch.problem
        kind = self._outbox_to.destination.kind
        if kind != "sqs" and not (isinstance(batch, StreamBatch) and not self._stream_records):
            return f"{batch.label}: only outbox items can be replayed to an {kind} destination"
        try:
            if isinstance(batch, KafkaBatch):
                return self._kafka(batch)
            if isinstance(batch, KinesisBatch):
                return self._kinesis_batch(batch)
            return self._stream(batch)
        except ClusterError as error:
            return f"{batch.label}: {error}"
        except (ClientError, BotoCoreError) as error:
            return f"{batch.label}: {error}"

    def _kafka(self, batch: KafkaBatch) -> str | None:
        if (self._topics and batch.topic not in self._topics) or (
            self._partitions and batch.partition not in self._partitions
        ):
            self._progress(f"skipped {batch.label} (filtered out)")
            return _FILTERED
        records, problem = batch.records, None
        if records is None:
            bootstrap = self.clusters.bootstrap_of(batch)
            if not bootstrap:
                return f"{batch.label}: the record names no cluster; pass --bootstrap-servers"
            read = self.clusters.reader(bootstrap).read(
                batch.topic, batch.partition, batch.first, batch.last
            )
            records = read.records
            if read.missing:
                shown = ", ".join(str(o) for o in read.missing[:10])
                more = " ..." if len(read.missing) > 10 else ""
                problem = (
                    f"{batch.label}: {len(read.missing)} offsets not in the cluster ({shown}{more}): "
                    "deleted by retention or compaction, or beyond the partition's end"
                )
        event = {
            "eventSource": "aws:kafka",
            "records": {f"{batch.topic}-{batch.partition}": records},
        }
        self._send(parse_kafka_event(event), batch, REPLAY_CODE)
        return problem

    def _kinesis_batch(self, batch: KinesisBatch) -> str | None:
        if self._kinesis is None:
            return f"{batch.label}: no Kinesis client"
        read = self._kinesis.read(batch)
        self._send(
            _keyed(parse_kinesis_event({"Records": read.records})), batch, KINESIS_REPLAY_CODE
        )
        return f"{batch.label}: {read.problem}" if read.problem else None

    def _stream_record_batch(self, batch: StreamBatch) -> str | None:
        if self._streams is None:
            return f"{batch.label}: no DynamoDB Streams client"
        raw, problem = self._streams.records(batch)
        event = {"Records": [lambda_stream_record(r, batch.stream_arn) for r in raw]}
        self._send(_keyed(parse_dynamodb_stream_event(event)), batch, STREAM_REPLAY_CODE)
        return f"{batch.label}: {problem}" if problem else None

    def _send(
        self, messages: list[InboundMessage], batch: KafkaBatch | StreamBatch, code: str
    ) -> None:
        """Each message in the dead-letter envelope to the destination (counted only, dry)."""
        reason = f"re-read from {batch.label} ({batch.condition or 'given up'}) by replay"
        for message in messages:
            if self.report.dry_run:
                self.report.would_send += 1
                continue
            self._sqs.send_message(
                **send_message_request(
                    self._destination,
                    message,
                    message_key=message.delivery_id,
                    code=code,
                    error=reason,
                )
            )
            self.report.sent += 1
        verb = "would send" if self.report.dry_run else "sent"
        self._progress(f"{verb} {counted(len(messages), 'record')} of {batch.label}")

    def _stream(self, batch: StreamBatch) -> str | None:
        if self._stream_records:
            return self._stream_record_batch(batch)
        if self._streams is None:
            return f"{batch.label}: no DynamoDB Streams client"
        read = self._streams.read(batch)
        messages = read.messages
        failed = 0
        to = self._outbox_to
        for chunk in chunks(messages, to.size, to.max_entries, to.max_bytes):
            if self.report.dry_run:
                self.report.would_send += len(chunk)
                continue
            sendable = [m for m in chunk if to.problem(m) is None]
            refused = to.send([(str(i), m) for i, m in enumerate(sendable)]) if sendable else []
            failed += len(chunk) - len(sendable) + len(refused)
            self.report.sent += len(sendable) - len(refused)
        verb = "would send" if self.report.dry_run else "sent"
        destinations = sorted({m.destination for m in messages})
        named = f", named for {', '.join(destinations)}" if destinations else ""
        self._progress(
            f"{verb} {counted(len(messages) - failed, 'outbox item')} of {batch.label} "
            f"(from the {read.found_in}{named})"
        )
        if failed:
            return (
                f"{batch.label}: {to.destination.target} refused {failed} of "
                f"{len(messages)} outbox items"
            )
        return f"{batch.label}: {read.problem}" if read.problem else None


def _keyed(messages: list[InboundMessage]) -> list[InboundMessage]:
    """Each message with its delivery id (a stream record's `eventID`, the default key of its
    first delivery) as `idempotency-key`: a consumer without a business key keys it the same."""
    for message in messages:
        key = {"DataType": "String", "StringValue": message.delivery_id}
        message.dead_letter_attributes = {
            **message.dead_letter_attributes,
            IDEMPOTENCY_KEY_ATTRIBUTE: key,
        }
    return messages


def _json(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise NotAFailureRecord("not JSON") from None
