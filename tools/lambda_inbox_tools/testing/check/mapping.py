"""The event source mapping the effectively-once check plays: the function's own, as its
template declares it, unless the test's arguments say otherwise.

A `LocalFunction` carries its template's events; the check takes the one the records come from
(the queue of their `eventSourceARN`, the Kafka topic, the Kinesis stream, the table of the
DynamoDB stream; the function's only event of that kind when the records name none of its
sources) and plays its settings as Lambda applies them:

- `FunctionResponseTypes`: without `ReportBatchItemFailures` Lambda does not read the response.
  An invocation that returns is a success whatever it reports: its whole batch is deleted (SQS)
  or checkpointed (Kafka, streams); only a failed invocation brings the batch back.
- `BatchSize`: the most records an invocation holds. An SQS mapping without a batching window
  receives at most 10 messages a poll, so Lambda refuses a standard queue's `BatchSize` above 10
  without `MaximumBatchingWindowInSeconds` (and a FIFO queue's above 10 at all): the check
  refuses it too, with a `ValueError`.
- `MaximumBatchingWindowInSeconds`: with a window, records waiting fill a Kafka batch from
  every partition up to `BatchSize`; without one, a batch holds what one poll found (some
  partitions). SQS and stream batches are always played as full as the records allow.
- `ParallelizationFactor` (Kinesis, DynamoDB Streams): above 1, a shard's partition keys (a
  table's items) are delivered as lanes of their own, each in order, interleaved (`lanes`).

A handler without a template (a plain function) is played with the kit's defaults: batches of
10 and partial batch responses read. `batch_size=` and `report_batch_item_failures=` override
either; `Report.settings` says what was played and where each setting came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...local.event_specs import KafkaEventSpec, KinesisEventSpec, SqsEventSpec, StreamEventSpec

__all__ = ["DEFAULT_BATCH_SIZE", "Played", "played_settings"]

#: The batch size played for a handler without a template, unless the test gives one.
DEFAULT_BATCH_SIZE = 10
#: What one SQS poll returns at most (ReceiveMessage's `MaxNumberOfMessages`).
SQS_POLL_MESSAGES = 10

Record = Mapping[str, Any]
SourceSpec = SqsEventSpec | KafkaEventSpec | KinesisEventSpec | StreamEventSpec
_KINDS: dict[str, type[Any]] = {
    "sqs": SqsEventSpec,
    "fifo": SqsEventSpec,
    "kafka": KafkaEventSpec,
    "kinesis": KinesisEventSpec,
    "dynamodb": StreamEventSpec,
}


@dataclass(frozen=True, slots=True)
class Played:
    """The mapping settings a run played, and where each came from."""

    batch_size: int
    report_batch_item_failures: bool
    #: `MaximumBatchingWindowInSeconds` (0 without a template).
    batching_window: float
    #: "template FUNCTION.EVENT", "argument", or "default (no template)", per setting.
    batch_size_from: str
    report_from: str
    #: A stream's `ParallelizationFactor` (1 without a template, and for queues and Kafka).
    parallelization: int = 1

    def __str__(self) -> str:
        report = "on" if self.report_batch_item_failures else "off"
        parallel = (
            f", ParallelizationFactor {self.parallelization}" if self.parallelization > 1 else ""
        )
        return (
            f"BatchSize {self.batch_size} ({self.batch_size_from}), "
            f"ReportBatchItemFailures {report} ({self.report_from}){parallel}"
        )


def played_settings(
    handler: Any,
    source: str,
    records: Sequence[Record],
    *,
    batch_size: int | None,
    report_batch_item_failures: bool | None,
) -> Played:
    """The settings to play for `records` (of `source`: "sqs", "fifo", "kafka", "kinesis",
    "dynamodb") against `handler`: the template's event, the arguments over it."""
    spec = getattr(handler, "spec", None)
    event = _event_of(spec, source, records) if spec is not None else None
    where = (
        f"template {spec.logical_id}.{event.name}" if spec and event else "default (no template)"
    )
    if event is not None:
        _refuse_what_lambda_refuses(event, source, where)
    size, size_from = (
        (batch_size, "argument")
        if batch_size is not None
        else (event.batch_size if event else DEFAULT_BATCH_SIZE, where)
    )
    report, report_from = (
        (report_batch_item_failures, "argument")
        if report_batch_item_failures is not None
        else (event.report_batch_item_failures if event else True, where)
    )
    if size < 1:
        raise ValueError(f"batch_size must be at least 1, not {size}")
    window = event.batching_window if event else 0.0
    parallelization = getattr(event, "parallelization_factor", 1) if event else 1
    return Played(size, report, window, size_from, report_from, parallelization)


def _event_of(spec: Any, source: str, records: Sequence[Record]) -> SourceSpec | None:
    """The function's event the records come from (None: the function has none of the kind)."""
    kind = _KINDS[source]
    candidates: list[SourceSpec] = [e for e in spec.events if isinstance(e, kind) and e.enabled]
    if not candidates:
        return None
    named = [e for e in candidates if _names_source_of(e, records[0])]
    if len(named) == 1 or (not named and len(candidates) == 1):
        return (named or candidates)[0]
    names = ", ".join(e.name for e in candidates)
    raise ValueError(
        f"{spec.logical_id} has {len(candidates)} {source} events ({names}) and the records come "
        "from none of them, or from several: build the records with the source's ARN from "
        "the template (app.stack.queue(...).arn), or pass batch_size= and "
        "report_batch_item_failures="
    )


def _names_source_of(event: SourceSpec, record: Record) -> bool:
    arn = str(record.get("eventSourceARN", ""))
    if isinstance(event, SqsEventSpec):
        return event.queue_arn == arn
    if isinstance(event, KafkaEventSpec):
        return str(record.get("topic")) in event.topics
    if isinstance(event, KinesisEventSpec):
        return arn.endswith(f":stream/{event.stream_name}")
    return f":table/{event.table_name}/stream/" in arn


def _refuse_what_lambda_refuses(event: SourceSpec, source: str, where: str) -> None:
    if not isinstance(event, SqsEventSpec):
        return
    if source == "fifo" and event.batch_size > SQS_POLL_MESSAGES:
        raise ValueError(
            f"{where}: BatchSize {event.batch_size} on a FIFO queue; Lambda allows at most 10"
        )
    if event.batch_size > SQS_POLL_MESSAGES and event.batching_window < 1:
        raise ValueError(
            f"{where}: BatchSize {event.batch_size} without MaximumBatchingWindowInSeconds; "
            "Lambda refuses a batch size above 10 on SQS without a batching window of at "
            "least 1 second"
        )
