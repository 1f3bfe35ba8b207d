"""Replay what a Kafka event source gave up on: each failed batch's records, read from the
destination that kept them or from the cluster, sent to an SQS queue that feeds the same
consumer (the example app's `PaymentReplayQueue`).

Every record is sent as the library's dead-letter envelope sends a Kafka record (its bytes,
key, headers and coordinates: `lambda_inbox.dead_letter_envelope`), so the consumer reads it exactly as
it would have read it from Kafka, and its inbox makes a record that committed before a no-op.
A failure record in SQS is deleted only once every record of its batch is sent: interrupted, a
run leaves it to the next one, which sends some records twice, at no cost but a duplicate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from lambda_inbox.dead_letter_envelope import send_message_request
from lambda_inbox.kafka import parse_kafka_event

from .cluster import ClusterError, ClusterReader
from .failures import FailedBatch, NotAFailureRecord, from_s3, from_sqs

#: `inbox-error-code` of a replayed record: why it is in the queue (not an error of its own).
REPLAY_CODE = "kafka_replay"


@dataclass
class ReplayReport:
    dry_run: bool = False
    batches: int = 0
    replayed: int = 0
    #: Batches with offsets the cluster no longer has (what it has was sent).
    incomplete: int = 0
    filtered: int = 0
    sent: int = 0
    would_send: int = 0
    missing: dict[str, list[int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return not (self.errors or self.missing or self.interrupted)

    def document(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "batches": self.batches,
            "replayed_batches": self.replayed,
            "incomplete_batches": self.incomplete,
            "filtered_out": self.filtered,
            "sent": self.sent,
            "would_send": self.would_send,
            "missing_offsets": self.missing,
            "errors": self.errors,
            "interrupted": self.interrupted,
            "ok": self.ok,
        }


class KafkaReplay:
    """One replay run. `reader` opens the cluster when a batch needs it (None: no cluster
    given, so a metadata-only failure record is an error); `stop` ends the run between two
    batches (SIGINT, SIGTERM)."""

    def __init__(
        self,
        sqs: Any,
        destination_url: str,
        *,
        reader: Callable[[], ClusterReader] | None,
        topics: Collection[str] = (),
        partitions: Collection[int] = (),
        dry_run: bool = False,
        stop: threading.Event | None = None,
        on_progress: Callable[[ReplayReport, str], None] = lambda report, line: None,
    ) -> None:
        self._sqs = sqs
        self._destination = destination_url
        self._open_reader = reader
        self._reader: ClusterReader | None = None
        self._topics = set(topics)
        self._partitions = set(partitions)
        self._stop = stop or threading.Event()
        self._progress = on_progress
        self.report = ReplayReport(dry_run=dry_run)

    def from_queue(self, queue_url: str, *, visibility_timeout: int = 300, wait: int = 1) -> None:
        """Replay every failure record of an SQS on-failure destination."""
        untouched: list[str] = []
        try:
            for page in from_sqs(
                self._sqs, queue_url, visibility_timeout=visibility_timeout, wait=wait
            ):
                for message, found in page:
                    receipt = message["ReceiptHandle"]
                    if self._stop.is_set():  # received, not replayed: the next run's
                        self.report.interrupted = True
                        untouched.append(receipt)
                    elif self._replay_all(found) and not self.report.dry_run:
                        self._sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=receipt)
                    else:
                        untouched.append(receipt)
                if self._stop.is_set():
                    self.report.interrupted = True
                    return
        finally:
            for receipt in untouched:  # visible again for the next run
                self._sqs.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=receipt, VisibilityTimeout=0
                )
            self._close()

    def from_bucket(self, s3: Any, bucket: str, prefix: str) -> None:
        """Replay every invocation record object of an S3 on-failure destination."""
        try:
            for _key, found in from_s3(s3, bucket, prefix):
                self._replay_all(found)
                if self._stop.is_set():
                    self.report.interrupted = True
                    return
        finally:
            self._close()

    def _replay_all(self, found: list[FailedBatch] | NotAFailureRecord) -> bool:
        """True when every batch of one failure record was replayed (so it can be removed)."""
        if isinstance(found, NotAFailureRecord):
            self.report.errors.append(str(found))
            return False
        results = [self._replay(batch) for batch in found]
        return all(results)

    def _replay(self, batch: FailedBatch) -> bool:
        report = self.report
        report.batches += 1
        if (self._topics and batch.topic not in self._topics) or (
            self._partitions and batch.partition not in self._partitions
        ):
            report.filtered += 1
            self._progress(report, f"skipped {batch.label} (filtered out)")
            return False
        records = batch.records
        if records is None:
            try:
                read = self._cluster().read(batch.topic, batch.partition, batch.first, batch.last)
            except ClusterError as error:
                report.errors.append(f"{batch.label}: {error}")
                return False
            records = read.records
            if read.missing:
                report.missing[batch.label] = read.missing
        event = {
            "eventSource": "aws:kafka",
            "records": {f"{batch.topic}-{batch.partition}": records},
        }
        reason = f"re-read from {batch.label} ({batch.condition or 'given up'}) by kafka-replay"
        for message in parse_kafka_event(event):
            if report.dry_run:
                report.would_send += 1
                continue
            request = send_message_request(
                self._destination,
                message,
                message_key=message.delivery_id,
                code=REPLAY_CODE,
                error=reason,
            )
            self._sqs.send_message(**request)
            report.sent += 1
        complete = batch.label not in report.missing
        if complete:
            report.replayed += 1
        else:
            report.incomplete += 1
        verb = "would send" if report.dry_run else "sent"
        self._progress(report, f"{verb} {len(records)} records of {batch.label}")
        return complete

    def _cluster(self) -> ClusterReader:
        if self._reader is None:
            if self._open_reader is None:
                raise ClusterError(
                    "the failure record holds offsets only: pass --bootstrap-servers to read them"
                )
            self._reader = self._open_reader()
        return self._reader

    def _close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
