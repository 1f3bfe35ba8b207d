"""The relay's metrics (EMF, Powertools) and its summary log line, per batch.

Totals under the `service` dimension (`OutboxRelayed`, `OutboxRelayFailures`,
`OutboxOldestItemAge`: seconds since the oldest item sent was written, how far the relay is
behind), and the same counts per destination kind under `service` and `destination_kind`
(`sqs`, `sns`, `eventbridge`), with `OutboxRelayRetries` (entries sent again after throttling
or a fault of the service): a relay that falls behind shows which kind holds it back.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

__all__ = ["RelayTally"]


@dataclass(slots=True)
class RelayTally:
    """What one batch of stream records became."""

    records: int = 0
    ignored: int = 0
    failed: int = 0
    #: Creation times (epoch seconds) of the messages sent.
    sent_created: list[float] = field(default_factory=list)
    sent_by_kind: Counter[str] = field(default_factory=Counter)
    failed_by_kind: Counter[str] = field(default_factory=Counter)
    retried_by_kind: Counter[str] = field(default_factory=Counter)

    def emit(self, namespace: str, service: str, now: float, logger: Logger) -> None:
        metrics = EphemeralMetrics(namespace=namespace, service=service)
        sent = len(self.sent_created)
        metrics.add_metric(name="OutboxRelayed", unit=MetricUnit.Count, value=sent)
        metrics.add_metric(name="OutboxRelayFailures", unit=MetricUnit.Count, value=self.failed)
        if self.sent_created:
            oldest = max(0.0, now - min(self.sent_created))
            metrics.add_metric(
                name="OutboxOldestItemAge", unit=MetricUnit.Seconds, value=round(oldest, 3)
            )
        metrics.flush_metrics()
        kinds = sorted({*self.sent_by_kind, *self.failed_by_kind, *self.retried_by_kind})
        for kind in kinds:
            by_kind = EphemeralMetrics(namespace=namespace, service=service)
            by_kind.add_dimension(name="destination_kind", value=kind)
            for name, counts in (
                ("OutboxRelayed", self.sent_by_kind),
                ("OutboxRelayFailures", self.failed_by_kind),
                ("OutboxRelayRetries", self.retried_by_kind),
            ):
                by_kind.add_metric(name=name, unit=MetricUnit.Count, value=counts[kind])
            by_kind.flush_metrics()
        logger.info(
            "outbox batch relayed",
            records=self.records,
            relayed=sent,
            failed=self.failed,
            ignored=self.ignored,
            retried=sum(self.retried_by_kind.values()),
            by_kind={kind: self.sent_by_kind[kind] for kind in kinds},
        )
