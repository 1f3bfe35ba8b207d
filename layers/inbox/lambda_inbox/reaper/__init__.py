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

`handler(event, context)` is the scheduled Lambda function's handler; `Reaper` runs one sweep
with a client and settings of your own (the `lambda-inbox reap` command does).
"""

from lambda_inbox.reaper._handler import handler
from lambda_inbox.reaper._settings import ReaperSettings
from lambda_inbox.reaper._summary import ConsumerCounts, ReapSummary, emit_metrics
from lambda_inbox.reaper._sweep import LEASE_EXPIRED_REASON, Reaper, message_of

__all__ = [
    "LEASE_EXPIRED_REASON",
    "ConsumerCounts",
    "ReapSummary",
    "Reaper",
    "ReaperSettings",
    "emit_metrics",
    "handler",
    "message_of",
]
