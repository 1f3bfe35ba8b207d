"""One sweep of the open-records index: reap expired leases, dead-letter what never comes back.

The route of a record, the concurrency rules and the stop before the deadline are in this
package's docstring; the conditional writes are `claims`'.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from lambda_inbox._dead_letter.queue import DeadLetterQueue
from lambda_inbox._errors import DeadlineReached, ErrorCode, short_error
from lambda_inbox._internal.deadline import Deadline
from lambda_inbox._messages import InboundMessage
from lambda_inbox.reaper._settings import ReaperSettings
from lambda_inbox.reaper._summary import ConsumerCounts, ReapSummary
from lambda_inbox.store import (
    OPEN_INDEX_SHARDS,
    InboxRecord,
    Status,
    epoch_of,
)
from lambda_inbox.store._open_index import open_records_of_shard
from lambda_inbox.store._reaper_claims import ReaperClaims

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

LEASE_EXPIRED_REASON = "the lease expired and the message was not delivered again"


class Reaper:
    """One inbox table's reaper. `reap_once()` is one sweep; the Lambda handler and
    `lambda-inbox reap [--dry-run]` both call it."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        settings: ReaperSettings,
        *,
        sqs: SQSClient | Callable[[], SQSClient] | None = None,
        now: Callable[[], float] = time.time,
        log: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self._dynamodb = dynamodb
        self.settings = settings
        self._sqs = sqs or _default_sqs
        self._queues: dict[str, DeadLetterQueue] = {}
        self._now = now
        self._log = log or (lambda message, extra: None)
        #: Bounds this run's writes and dead letters (`Deadline.run`); none outside Lambda.
        self._deadline = Deadline(None)
        self._claims = ReaperClaims(
            dynamodb,
            settings.table,
            token=uuid.uuid4().hex,
            claim_seconds=settings.claim_timeout.total_seconds(),
            failed_retention_seconds=settings.failed_retention.total_seconds(),
        )

    def reap_once(
        self, *, dry_run: bool = False, time_left: Callable[[], float] | None = None
    ) -> ReapSummary:
        """One sweep over every shard of the open-records index.

        `time_left` (seconds, e.g. from the Lambda context) makes the sweep stop
        `stop_margin` before the deadline, with `complete` False.
        """
        summary = ReapSummary(dry_run=dry_run)
        margin = self.settings.stop_margin.total_seconds()
        seen: set[str] = set()
        for record in self._open_records():
            left = time_left() if time_left is not None else None
            if left is not None and left < margin:
                summary.complete = False
                self._log("reaper stopped before the deadline", {"open": summary.open})
                return summary
            if left is not None:  # this record's writes end by then, half the margin to answer
                self._deadline = Deadline(time.monotonic() + left - margin / 2)
            if record.pk not in seen:
                seen.add(record.pk)
                try:
                    self._visit(record, summary, dry_run)
                except DeadlineReached:  # the record stays open for the next run
                    summary.complete = False
                    self._log("reaper stopped at the deadline", {"open": summary.open})
                    return summary
        return summary

    run = reap_once

    def _open_records(self) -> Iterator[InboxRecord]:
        """Leases first, then failures; shards in an order that rotates every minute, so no
        shard is always last when a run stops at its deadline."""
        start = int(self._now() // 60) % OPEN_INDEX_SHARDS
        for status in (Status.IN_PROGRESS, Status.FAILED):
            for n in range(OPEN_INDEX_SHARDS):
                yield from open_records_of_shard(
                    self._dynamodb,
                    self.settings.table,
                    status,
                    (start + n) % OPEN_INDEX_SHARDS,
                    newest_first=False,
                    page_size=self.settings.page_size,
                )

    def _visit(self, record: InboxRecord, summary: ReapSummary, dry_run: bool) -> None:
        now = self._now()
        counts = summary.count_open(record.consumer, age=now - (epoch_of(record.open_since) or now))
        if record.status is Status.IN_PROGRESS:
            counts.in_progress += 1
            if not record.lease_expired(now, self.settings.lease_grace.total_seconds()):
                return  # a live lease, or one the next delivery may still claim
            if not dry_run and not self._reap(record, now):
                return
            summary.reaped += 1
            counts.reaped += 1
            if dry_run:
                self._would_dead_letter(record, summary, counts)
                return
            failed = record._replace(
                status=Status.FAILED,
                error_code=ErrorCode.LEASE_EXPIRED.value,
                last_error=LEASE_EXPIRED_REASON,
            )
            self._send(failed, summary, counts, claimed=True)
            return
        counts.failed += 1
        if record.dead_lettered_at:
            return
        if dry_run:
            self._would_dead_letter(record, summary, counts)
            return
        self._send(record, summary, counts, claimed=False)

    def _would_dead_letter(
        self, record: InboxRecord, summary: ReapSummary, counts: ConsumerCounts
    ) -> None:
        if self.settings.queue_for(record.consumer) is None:
            summary.undeliverable += 1
        else:
            summary.dead_lettered += 1
            counts.dead_lettered += 1

    def _reap(self, record: InboxRecord, now: float) -> bool:
        code, reason = ErrorCode.LEASE_EXPIRED.value, LEASE_EXPIRED_REASON
        if not self._deadline.run(
            self._claims.reap_lease, record, code=code, reason=reason, now=now
        ):
            return False  # taken over, completed or reaped by another run meanwhile
        self._log("lease reaped", {"consumer": record.consumer, "message_key": record.message_key})
        return True

    def _send(
        self, record: InboxRecord, summary: ReapSummary, counts: ConsumerCounts, *, claimed: bool
    ) -> None:
        queue_url = self.settings.queue_for(record.consumer)
        if queue_url is None:
            summary.undeliverable += 1
            self._log("no dead-letter queue for this consumer", {"consumer": record.consumer})
            if claimed:
                self._settle(record, dead_lettered=False)
            return
        if not claimed and not self._deadline.run(self._claims.claim, record, now=self._now()):
            return  # another run holds it, or it is done
        try:
            self._deadline.run(
                self._queue(queue_url).send,
                message_of(record),
                message_key=record.message_key,
                code=record.error_code or ErrorCode.LEASE_EXPIRED.value,
                error=record.last_error or record.error_code or "",
            )
        except Exception as error:
            summary.errors += 1
            self._log(
                "reaper could not dead-letter the record; the next run retries",
                {"message_key": record.message_key, "error": short_error(error)},
            )
            self._settle(record, dead_lettered=False)
            return
        summary.dead_lettered += 1
        counts.dead_lettered += 1
        self._settle(record, dead_lettered=True)

    def _settle(self, record: InboxRecord, *, dead_lettered: bool) -> None:
        self._deadline.run(
            self._claims.settle, record, dead_lettered=dead_lettered, now=self._now()
        )

    def _queue(self, url: str) -> DeadLetterQueue:
        if url not in self._queues:
            self._queues[url] = DeadLetterQueue(self._sqs, url)
        return self._queues[url]


def message_of(record: InboxRecord) -> InboundMessage:
    """The message as the reaper can rebuild it: the payload snapshot taken at claim time."""
    extra: dict[str, Any] = {
        "inbox-consumer": {"DataType": "String", "StringValue": record.consumer},
    }
    if record.payload_truncated:
        extra["inbox-payload-truncated"] = {"DataType": "String", "StringValue": "true"}
    body = record.payload_snapshot or b""
    if not body:
        extra["inbox-payload-missing"] = {"DataType": "String", "StringValue": "true"}
    return InboundMessage(
        item_identifier=None,
        delivery_id=record.delivery_id or record.pk,
        body=body,
        source=record.source or "",
        sequence=0,
        dead_letter_attributes=extra,
    )


def _default_sqs() -> SQSClient:
    from lambda_inbox._internal.aws_clients import sqs_client

    return sqs_client()
