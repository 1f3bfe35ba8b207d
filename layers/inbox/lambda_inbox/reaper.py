"""The reaper: sweeps the open records of an inbox table (scheduled; also `lambda-inbox reap`).

It reads only the sparse `open-records` index (every shard of both open statuses, a page at a
time; never a scan) and, per record:

- `IN_PROGRESS` whose lease expired more than `lease_grace` ago: the delivery that claimed it is
  gone and its message is not coming back (the grace covers the source's redelivery window), so
  the record becomes `FAILED` with `error_code = lease_expired` and its payload snapshot is
  dead-lettered. A lease that expired less than `lease_grace` ago is left alone: the next
  delivery of its message claims it (leased mode counts that attempt).
- `FAILED` without `dead_lettered_at` (the reaper itself failed or stopped between the two
  steps): dead-lettered. Records the consumer dead-lettered itself carry `dead_lettered_at` and
  are never sent again.

Exactly once across concurrent runs: a run first claims the record with a conditional update
(`reaper_claim` token and `reaper_claim_expires`, only if `dead_lettered_at` is absent and no
live claim exists), sends the message, then sets `dead_lettered_at` on condition that its claim
still stands. Only a run that dies between sending and that last write leaves the record to be
sent again once its claim expires (`claim_timeout`); a FIFO DLQ deduplicates even that.

Every record is counted (open records per consumer, age of the oldest). The run stops
`stop_margin` before the Lambda deadline and reports `complete: false`; the next run picks up
what is left (done records no longer qualify).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import IO, TYPE_CHECKING, Any

from .dead_letter import DeadLetterQueue
from .decision import short_error
from .errors import ConfigurationError, ErrorCode
from .messages import InboundMessage
from .store import (
    OPEN_INDEX_PK,
    OPEN_INDEX_SHARDS,
    OPEN_INDEX_SK,
    PARTITION_KEY,
    InboxRecord,
    Status,
    open_index_pk,
    open_index_shard,
    open_records_of_shard,
    utc_iso,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

LEASE_EXPIRED_REASON = "the lease expired and the message was not delivered again"


@dataclass(frozen=True)
class ReaperSettings:
    """Where the reaper looks and where it sends; `from_env` reads the Lambda environment."""

    table: str
    #: Dead-letter queue URL per consumer name.
    dead_letter_queues: Mapping[str, str] = field(default_factory=dict)
    #: For consumers not in `dead_letter_queues`.
    default_dead_letter_queue: str | None = None
    lease_grace: timedelta = timedelta(minutes=15)
    page_size: int = 100
    claim_timeout: timedelta = timedelta(minutes=5)
    stop_margin: timedelta = timedelta(seconds=5)

    def __post_init__(self) -> None:
        if not self.table:
            raise ConfigurationError("the reaper needs the inbox table (set INBOX_TABLE)")
        if not 1 <= self.page_size <= 1000:
            raise ConfigurationError("page_size must be between 1 and 1000")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ReaperSettings:
        """`INBOX_TABLE` (required), `INBOX_REAPER_DLQ_URLS` (JSON object consumer -> queue URL),
        `DEAD_LETTER_QUEUE_URL` (any other consumer), `INBOX_REAPER_LEASE_GRACE_SECONDS` (900),
        `INBOX_REAPER_PAGE_SIZE` (100), `INBOX_REAPER_CLAIM_SECONDS` (300),
        `INBOX_REAPER_STOP_MARGIN_SECONDS` (5)."""
        env = os.environ if environ is None else environ
        queues: dict[str, str] = {}
        raw = env.get("INBOX_REAPER_DLQ_URLS", "").strip()
        if raw:
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError as error:
                raise ConfigurationError(f"INBOX_REAPER_DLQ_URLS is not JSON: {error}") from None
            if not isinstance(parsed, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in parsed.items()
            ):
                raise ConfigurationError("INBOX_REAPER_DLQ_URLS must map consumer names to URLs")
            queues = {name: url for name, url in parsed.items() if url}

        def seconds(name: str, default: float) -> timedelta:
            text = env.get(name, "")
            try:
                return timedelta(seconds=float(text)) if text else timedelta(seconds=default)
            except ValueError:
                raise ConfigurationError(f"{name} must be a number of seconds") from None

        page = env.get("INBOX_REAPER_PAGE_SIZE", "")
        return cls(
            table=env.get("INBOX_TABLE", ""),
            dead_letter_queues=queues,
            default_dead_letter_queue=env.get("DEAD_LETTER_QUEUE_URL") or None,
            lease_grace=seconds("INBOX_REAPER_LEASE_GRACE_SECONDS", 900),
            page_size=int(page) if page.isdigit() else 100,
            claim_timeout=seconds("INBOX_REAPER_CLAIM_SECONDS", 300),
            stop_margin=seconds("INBOX_REAPER_STOP_MARGIN_SECONDS", 5),
        )

    def queue_for(self, consumer: str) -> str | None:
        return self.dead_letter_queues.get(consumer) or self.default_dead_letter_queue


@dataclass
class ConsumerCounts:
    open: int = 0
    in_progress: int = 0
    failed: int = 0
    reaped: int = 0
    dead_lettered: int = 0
    oldest_open_age_seconds: float = 0.0


@dataclass
class ReapSummary:
    """What one run did (with `dry_run`: what it would have done)."""

    reaped: int = 0
    dead_lettered: int = 0
    open: int = 0
    #: Seconds since the oldest open record became open work (failure time, lease expiry).
    oldest_open_age_seconds: float = 0.0
    #: FAILED records that need dead-lettering but have no queue configured.
    undeliverable: int = 0
    errors: int = 0
    complete: bool = True
    dry_run: bool = False
    consumers: dict[str, ConsumerCounts] = field(default_factory=dict)

    def consumer(self, name: str) -> ConsumerCounts:
        return self.consumers.setdefault(name, ConsumerCounts())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
        self._token = uuid.uuid4().hex

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
        start = int(self._now() // 60) % OPEN_INDEX_SHARDS  # rotate: no shard always last
        shards = [(start + n) % OPEN_INDEX_SHARDS for n in range(OPEN_INDEX_SHARDS)]
        for status in (Status.IN_PROGRESS, Status.FAILED):
            for shard in shards:
                for record in self._records(status, shard):
                    if time_left is not None and time_left() < margin:
                        summary.complete = False
                        self._log("reaper stopped before the deadline", {"open": summary.open})
                        return summary
                    if record.pk in seen:
                        continue
                    seen.add(record.pk)
                    self._visit(record, summary, dry_run)
        return summary

    run = reap_once

    # ---- per record -------------------------------------------------------------------------

    def _visit(self, record: InboxRecord, summary: ReapSummary, dry_run: bool) -> None:
        now = self._now()
        counts = summary.consumer(record.consumer)
        age = max(0.0, now - _epoch(record.open_since, now))
        summary.open += 1
        counts.open += 1
        summary.oldest_open_age_seconds = max(summary.oldest_open_age_seconds, age)
        counts.oldest_open_age_seconds = max(counts.oldest_open_age_seconds, age)
        if record.status is Status.IN_PROGRESS:
            counts.in_progress += 1
            expired_at = record.lease_expires_at or 0.0
            if expired_at + self.settings.lease_grace.total_seconds() >= now:
                return  # a live lease, or one the next delivery may still claim
            if dry_run:
                summary.reaped += 1
                counts.reaped += 1
                self._would_dead_letter(record, summary, counts)
                return
            if not self._reap(record, now):
                return
            summary.reaped += 1
            counts.reaped += 1
            failed = InboxRecord(
                **{
                    **asdict(record),
                    "status": Status.FAILED,
                    "error_code": ErrorCode.LEASE_EXPIRED.value,
                    "last_error": LEASE_EXPIRED_REASON,
                }
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
        """IN_PROGRESS (expired, unchanged since read) -> FAILED lease_expired, claimed by us."""
        assert record.lease_expires_at is not None
        stamp = utc_iso(now)
        try:
            self._dynamodb.update_item(
                TableName=self.settings.table,
                Key={PARTITION_KEY: {"S": record.pk}},
                UpdateExpression=(
                    "SET #status = :failed, error_code = :code, last_error = :error, "
                    "failed_at = :stamp, #open_pk = :open_pk, #open_sk = :stamp, "
                    "reaper_claim = :token, reaper_claim_expires = :claim_expires"
                ),
                ConditionExpression=(
                    "#status = :in_progress AND #owner = :owner AND lease_expires_at = :lease"
                ),
                ExpressionAttributeNames={
                    "#status": "status",
                    "#owner": "owner",
                    "#open_pk": OPEN_INDEX_PK,
                    "#open_sk": OPEN_INDEX_SK,
                },
                ExpressionAttributeValues={
                    ":failed": {"S": Status.FAILED.value},
                    ":in_progress": {"S": Status.IN_PROGRESS.value},
                    ":code": {"S": ErrorCode.LEASE_EXPIRED.value},
                    ":error": {"S": LEASE_EXPIRED_REASON},
                    ":stamp": {"S": stamp},
                    ":open_pk": {"S": open_index_pk(Status.FAILED, open_index_shard(record.pk))},
                    ":token": {"S": self._token},
                    ":claim_expires": {"N": str(int(now + self._claim_seconds))},
                    ":owner": {"S": record.owner or ""},
                    ":lease": {"N": f"{record.lease_expires_at:.3f}"},
                },
            )
        except self._dynamodb.exceptions.ConditionalCheckFailedException:
            return False  # taken over, completed or reaped by another run meanwhile
        self._log("lease reaped", {"consumer": record.consumer, "message_key": record.message_key})
        return True

    @property
    def _claim_seconds(self) -> float:
        return self.settings.claim_timeout.total_seconds()

    def _claim(self, record: InboxRecord, now: float) -> bool:
        try:
            self._dynamodb.update_item(
                TableName=self.settings.table,
                Key={PARTITION_KEY: {"S": record.pk}},
                UpdateExpression="SET reaper_claim = :token, reaper_claim_expires = :expires",
                ConditionExpression=(
                    "#status = :failed AND attribute_not_exists(dead_lettered_at) AND "
                    "(attribute_not_exists(reaper_claim_expires) OR reaper_claim_expires < :now)"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":failed": {"S": Status.FAILED.value},
                    ":token": {"S": self._token},
                    ":expires": {"N": str(int(now + self._claim_seconds))},
                    ":now": {"N": str(int(now))},
                },
            )
        except self._dynamodb.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _send(
        self, record: InboxRecord, summary: ReapSummary, counts: ConsumerCounts, *, claimed: bool
    ) -> None:
        queue_url = self.settings.queue_for(record.consumer)
        if queue_url is None:
            summary.undeliverable += 1
            self._log("no dead-letter queue for this consumer", {"consumer": record.consumer})
            if claimed:
                self._settle_claim(record, dead_lettered=False)
            return
        if not claimed and not self._claim(record, self._now()):
            return  # another run holds it, or it is done
        try:
            self._queue(queue_url).send(
                _message_of(record),
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
            self._settle_claim(record, dead_lettered=False)
            return
        summary.dead_lettered += 1
        counts.dead_lettered += 1
        self._settle_claim(record, dead_lettered=True)

    def _settle_claim(self, record: InboxRecord, *, dead_lettered: bool) -> None:
        """Drop our claim; with `dead_lettered`, mark the record sent (never again)."""
        expression = "REMOVE reaper_claim, reaper_claim_expires"
        values: dict[str, Any] = {":token": {"S": self._token}}
        if dead_lettered:
            expression = "SET dead_lettered_at = :stamp " + expression
            values[":stamp"] = {"S": utc_iso(self._now())}
        # Replaced meanwhile (a replay claimed or completed it): nothing to mark.
        with contextlib.suppress(self._dynamodb.exceptions.ConditionalCheckFailedException):
            self._dynamodb.update_item(
                TableName=self.settings.table,
                Key={PARTITION_KEY: {"S": record.pk}},
                UpdateExpression=expression,
                ConditionExpression="reaper_claim = :token",
                ExpressionAttributeValues=values,
            )

    def _queue(self, url: str) -> DeadLetterQueue:
        if url not in self._queues:
            self._queues[url] = DeadLetterQueue(self._sqs, url)
        return self._queues[url]

    # ---- index ------------------------------------------------------------------------------

    def _records(self, status: Status, shard: int) -> Iterator[InboxRecord]:
        return open_records_of_shard(
            self._dynamodb,
            self.settings.table,
            status,
            shard,
            newest_first=False,  # oldest first
            page_size=self.settings.page_size,
        )


def _message_of(record: InboxRecord) -> InboundMessage:
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


def _epoch(iso: str | None, default: float) -> float:
    if not iso:
        return default
    try:
        return datetime.fromisoformat(iso).timestamp()
    except ValueError:
        return default


def _default_sqs() -> SQSClient:
    import boto3

    from .consumer import CLIENT_CONFIG

    return boto3.client("sqs", config=CLIENT_CONFIG)


def emit_metrics(
    summary: ReapSummary,
    *,
    namespace: str | None = None,
    service: str | None = None,
    stream: IO[str] | None = None,
) -> None:
    """Print the run's metrics as CloudWatch EMF: `Reaped`, `DeadLettered`, `OpenRecords`,
    `OldestOpenRecordAge` (seconds) and `ReaperErrors` for the table (dimension `service`),
    and `OpenRecords` / `OldestOpenRecordAge` per consumer (dimensions `service`, `consumer`)."""
    namespace = namespace or os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "LambdaInbox")
    service = service or os.environ.get("POWERTOOLS_SERVICE_NAME", "inbox-reaper")
    out = stream or sys.stdout
    stamp = int(time.time() * 1000)

    def record(dimensions: dict[str, str], values: dict[str, tuple[float, str]]) -> None:
        document: dict[str, Any] = {
            "_aws": {
                "Timestamp": stamp,
                "CloudWatchMetrics": [
                    {
                        "Namespace": namespace,
                        "Dimensions": [list(dimensions)],
                        "Metrics": [{"Name": n, "Unit": u} for n, (_, u) in values.items()],
                    }
                ],
            },
            **dimensions,
            **{name: value for name, (value, _) in values.items()},
        }
        out.write(json.dumps(document, separators=(",", ":")) + "\n")

    record(
        {"service": service},
        {
            "Reaped": (summary.reaped, "Count"),
            "DeadLettered": (summary.dead_lettered, "Count"),
            "OpenRecords": (summary.open, "Count"),
            "OldestOpenRecordAge": (round(summary.oldest_open_age_seconds, 3), "Seconds"),
            "ReaperErrors": (summary.errors, "Count"),
        },
    )
    for consumer, counts in sorted(summary.consumers.items()):
        record(
            {"service": service, "consumer": consumer},
            {
                "OpenRecords": (counts.open, "Count"),
                "OldestOpenRecordAge": (round(counts.oldest_open_age_seconds, 3), "Seconds"),
            },
        )
    out.flush()
