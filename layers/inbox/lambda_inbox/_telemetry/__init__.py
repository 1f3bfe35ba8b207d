"""Structured logs and EMF metrics with Powertools; tracing only when a Tracer is supplied.

Logs carry the message key and outcome, never payloads. Metrics (namespace from
`POWERTOOLS_METRICS_NAMESPACE`, default `LambdaInbox`, dimension `consumer`): one count per
outcome (`MessagesCommitted`, `MessagesDuplicate`, `MessagesBusinessOutcome`,
`MessagesDeadLettered`, `MessagesFailed`, `MessagesSkipped`), `Transactions`,
`TransactionsCancelled`, `TransactionsTransient` (throttled, 5xx or timed out),
`CommitLatency` in milliseconds, `DuplicateReads` (batches whose inbox keys were read before the
commit), and in leased mode `LeasesLost`, `LeasesBusy` and
`SideEffectsFailed`.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from logging import DEBUG, INFO
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import EphemeralMetrics
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from lambda_inbox._messages import InboundMessage
from lambda_inbox._outcomes import ALWAYS_LOGGED, MessageResult, Outcome

if TYPE_CHECKING:  # protocols type the code only: nothing checks them at run time
    from typing import Protocol

    from aws_lambda_powertools import Tracer

    class TransactionAttempt(Protocol):
        """What the metrics read of one `TransactWriteItems` attempt."""

        @property
        def status(self) -> str: ...
        @property
        def error(self) -> str: ...
        @property
        def latency_ms(self) -> float: ...


#: EMF carries at most 100 values per metric and record, and Powertools publishes on its own
#: (leaving the batch's flush empty, with a warning) when a metric reaches 100: stay below.
MAX_METRIC_VALUES = 99
OUTCOME_METRICS = {
    Outcome.COMMITTED: "MessagesCommitted",
    Outcome.BUSINESS_OUTCOME: "MessagesBusinessOutcome",
    Outcome.DUPLICATE: "MessagesDuplicate",
    Outcome.DEAD_LETTERED: "MessagesDeadLettered",
    Outcome.FAILED: "MessagesFailed",
    Outcome.SKIPPED: "MessagesSkipped",
}
#: Powertools' default storage resolution (seconds): standard, not high-resolution.
STANDARD_RESOLUTION = 60
#: One batch's metrics as Powertools keeps them: name -> {"Unit", "StorageResolution", "Value"}.
MetricSet = dict[str, dict[str, Any]]
#: An EMF record as Powertools prints it (`json.dumps` with compact separators).
_emf_text = json.JSONEncoder(separators=(",", ":")).encode
#: Leased mode: error codes that get a metric of their own.
CODE_METRICS = {
    "lease_lost": "LeasesLost",
    "in_progress": "LeasesBusy",
    "side_effect_failed": "SideEffectsFailed",
}


class Telemetry:
    """Logs, metrics and (optional) traces of one consumer.

    Pass your own Powertools `Logger`/`Metrics` to share them with the rest of your function;
    the inbox then leaves flushing metrics to your `@metrics.log_metrics`. Otherwise it owns a
    `Metrics` instance and flushes it after each batch.
    """

    def __init__(
        self,
        consumer: str,
        *,
        logger: Logger | None = None,
        metrics: Metrics | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.consumer = consumer
        self.logger = logger or Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", consumer))
        self._owns_metrics = metrics is None
        #: `POWERTOOLS_METRICS_DISABLED` (or `POWERTOOLS_DEV`), read once like the rest of the
        #: consumer's environment: Powertools reads it again for every flush.
        self._metrics_disabled = is_metrics_disabled()
        if metrics is None:
            # Its own metric set: Powertools' `Metrics` share one per process, so two consumers
            # in one process (or one flushing while another adds) would mix their dimensions.
            owned = EphemeralMetrics(
                namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "LambdaInbox")
            )
            owned.set_default_dimensions(consumer=consumer)
            self.metrics: Metrics | EphemeralMetrics = owned
        else:
            self.metrics = metrics
        self._tracer = tracer

    def logs_each_message(self) -> bool:
        """True when `message_done` logs every outcome, not only `ALWAYS_LOGGED`."""
        return bool(self.logger.log_level <= DEBUG)

    def message_done(
        self,
        message: InboundMessage,
        outcome: Outcome,
        key: str | None,
        code: str | None,
        detail: str,
    ) -> None:
        quiet = outcome not in ALWAYS_LOGGED
        if quiet and self.logger.log_level > DEBUG:  # the usual case: nothing to build
            return
        extra: dict[str, Any] = {
            "consumer": self.consumer,
            "message_key": key,
            "delivery_id": message.delivery_id,
            "outcome": outcome.value,
        }
        if code:
            extra["error_code"] = code
        if quiet:
            self.logger.debug(f"message {outcome.value}", extra=extra)
        else:
            self.logger.warning(f"message {outcome.value}: {detail}", extra=extra)

    def transaction_done(self, attempt: TransactionAttempt, messages: int) -> None:
        if attempt.status != "committed":
            self.logger.info(
                "transaction not committed",
                extra={
                    "consumer": self.consumer,
                    "status": attempt.status,
                    "messages": messages,
                    "error": attempt.error[:500],
                },
            )

    @contextlib.contextmanager
    def commit_span(self, messages: int) -> Iterator[None]:
        if self._tracer is None:
            yield
            return
        with self._tracer.provider.in_subsegment("## inbox commit") as subsegment:
            subsegment.put_annotation("consumer", self.consumer)
            subsegment.put_metadata("messages", messages)
            yield

    def batch_done(
        self,
        results: Sequence[MessageResult],
        attempts: Sequence[TransactionAttempt],
        read_first: str | None = None,
    ) -> None:
        """Emit the batch's metrics and summary log line; `read_first` says why the inbox keys
        were read before the commit (None: they were not)."""
        if not results:
            return
        counts: dict[Outcome, int] = {}
        codes: dict[str, int] = {}
        for result in results:
            counts[result.outcome] = counts.get(result.outcome, 0) + 1
            if result.error_code:
                codes[result.error_code] = codes.get(result.error_code, 0) + 1
        metric_set: MetricSet = {}
        for outcome, name in OUTCOME_METRICS.items():
            if count := counts.get(outcome):
                metric_set[name] = _counts(count)
        for code, name in CODE_METRICS.items():
            if count := codes.get(code):
                metric_set[name] = _counts(count)
        total = len(attempts)
        if total:
            statuses = [attempt.status for attempt in attempts]
            metric_set["Transactions"] = _counts(total)
            metric_set["TransactionsCancelled"] = _counts(statuses.count("cancelled"))
            metric_set["TransactionsTransient"] = _counts(statuses.count("transient"))
        if read_first:
            metric_set["DuplicateReads"] = _counts(1)
        if attempts:
            metric_set["CommitLatency"] = {
                "Unit": "Milliseconds",
                "StorageResolution": STANDARD_RESOLUTION,
                "Value": [float(attempt.latency_ms) for attempt in attempts[:MAX_METRIC_VALUES]],
            }
        if self.logger.log_level <= INFO:  # the line's fields are made only when it is written
            self.logger.info(
                "batch processed",
                extra={
                    "consumer": self.consumer,
                    "records": len(results),
                    "transactions": total,
                    "read_first": read_first,
                    **{outcome.value: count for outcome, count in counts.items()},
                },
            )
        self._publish(metric_set)

    def _publish(self, metric_set: MetricSet) -> None:
        """The batch's metrics: added to the caller's `Metrics` (its `@log_metrics` flushes
        them), or written as one EMF record by the owned one.

        The owned record is Powertools' own (`serialize_metric_set`), made from the batch's set
        directly: `add_metric` validates its name, unit and value and formats a debug line on
        every call, several times the cost of the record (docs/PERFORMANCE.md)."""
        metrics = self.metrics
        if self._owns_metrics and not metrics.metric_set:
            if metric_set and not self._metrics_disabled:
                record = metrics.serialize_metric_set(
                    metrics=metric_set,
                    dimensions=metrics.dimension_set,
                    metadata=metrics.metadata_set,
                )
                print(_emf_text(record))  # where Powertools' flush writes it: standard output
            return
        # The caller's Metrics, or the owned one holding metrics added by other code: through
        # `add_metric`, which merges them.
        if not self._owns_metrics:  # the caller's dimensions are the caller's: add ours
            metrics.add_dimension("consumer", self.consumer)
        for name, metric in metric_set.items():
            for value in metric["Value"]:
                metrics.add_metric(name, metric["Unit"], value)
        if self._owns_metrics:
            metrics.flush_metrics()


def _counts(count: int) -> dict[str, Any]:
    """A Count metric of one value, as `add_metric` would keep it."""
    return {"Unit": "Count", "StorageResolution": STANDARD_RESOLUTION, "Value": [float(count)]}
