"""What one reaper run did, and its metrics (Powertools, as CloudWatch EMF)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit


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

    def count_open(self, consumer: str, *, age: float) -> ConsumerCounts:
        """Count one open record of `consumer`, open for `age` seconds; its consumer's counts."""
        counts = self.consumer(consumer)
        age = max(0.0, age)
        self.open += 1
        counts.open += 1
        self.oldest_open_age_seconds = max(self.oldest_open_age_seconds, age)
        counts.oldest_open_age_seconds = max(counts.oldest_open_age_seconds, age)
        return counts

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def emit_metrics(
    summary: ReapSummary, *, namespace: str | None = None, service: str | None = None
) -> None:
    """Print the run's metrics as CloudWatch EMF through Powertools: `Reaped`, `DeadLettered`,
    `OpenRecords`, `OldestOpenRecordAge` (seconds) and `ReaperErrors` for the table (dimension
    `service`), and `OpenRecords` / `OldestOpenRecordAge` per consumer (dimensions `service`,
    `consumer`). Ephemeral: never mixed with the metrics of a consumer in the same process."""
    namespace = namespace or os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "LambdaInbox")
    service = service or os.environ.get("POWERTOOLS_SERVICE_NAME", "inbox-reaper")
    table = EphemeralMetrics(namespace=namespace, service=service)
    table.add_metric(name="Reaped", unit=MetricUnit.Count, value=summary.reaped)
    table.add_metric(name="DeadLettered", unit=MetricUnit.Count, value=summary.dead_lettered)
    table.add_metric(name="OpenRecords", unit=MetricUnit.Count, value=summary.open)
    table.add_metric(
        name="OldestOpenRecordAge",
        unit=MetricUnit.Seconds,
        value=round(summary.oldest_open_age_seconds, 3),
    )
    table.add_metric(name="ReaperErrors", unit=MetricUnit.Count, value=summary.errors)
    table.flush_metrics()
    for consumer, counts in sorted(summary.consumers.items()):
        per_consumer = EphemeralMetrics(namespace=namespace, service=service)
        per_consumer.add_dimension(name="consumer", value=consumer)
        per_consumer.add_metric(name="OpenRecords", unit=MetricUnit.Count, value=counts.open)
        per_consumer.add_metric(
            name="OldestOpenRecordAge",
            unit=MetricUnit.Seconds,
            value=round(counts.oldest_open_age_seconds, 3),
        )
        per_consumer.flush_metrics()
