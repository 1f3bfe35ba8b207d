"""The event sources of the template's functions, as the local stack emulates them: one spec per
SAM event (`SQS`, `MSK`, `SelfManagedKafka`, `DynamoDB`, `Kinesis`, `Schedule`, `ScheduleV2`) or
`AWS::Lambda::EventSourceMapping` (a queue, a table's stream, else a Kafka source)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from .cfn import TemplateError


@dataclass(frozen=True)
class SqsEventSpec:
    name: str
    queue_arn: str
    batch_size: int
    batching_window: float
    report_batch_item_failures: bool
    enabled: bool = True


@dataclass(frozen=True)
class KafkaEventSpec:
    name: str
    topics: tuple[str, ...]
    batch_size: int
    batching_window: float
    report_batch_item_failures: bool
    starting_position: str
    consumer_group: str
    maximum_retry_attempts: int | None
    on_failure_arn: str | None
    enabled: bool = True
    #: A self-managed Apache Kafka source (`SelfManagedKafka`): its events say so and carry no
    #: cluster ARN.
    self_managed: bool = False
    #: The MSK cluster's ARN (the SAM event's `Stream`, the mapping's `EventSourceArn`).
    cluster_arn: str | None = None
    #: A self-managed source's bootstrap servers as the template configures them (the SAM
    #: event's `KafkaBootstrapServers`, the mapping's `SelfManagedEventSource.Endpoints`): what
    #: its events name in `bootstrapServers`, as AWS's do.
    bootstrap_servers: tuple[str, ...] = ()

    @property
    def retry_limit(self) -> int | None:
        """Retries of a failed batch before it is given up; None: forever. "When you configure
        both infinite retries and an on-failure destination, Lambda automatically applies a
        maximum of 10 retry attempts" (AWS, "Using a Kafka topic as an on-failure
        destination")."""
        if self.maximum_retry_attempts is None and self.on_failure_arn:
            return INFINITE_RETRIES_WITH_DESTINATION
        return self.maximum_retry_attempts


#: The retry cap Lambda applies to a Kafka mapping with infinite retries and a destination.
INFINITE_RETRIES_WITH_DESTINATION = 10


@dataclass(frozen=True)
class StreamEventSpec:
    """A DynamoDB stream trigger (SAM `DynamoDB` event, or a mapping from a table's stream)."""

    name: str
    #: The physical name of the table whose stream triggers the function.
    table_name: str
    batch_size: int
    batching_window: float
    report_batch_item_failures: bool
    starting_position: str
    bisect_on_error: bool
    maximum_retry_attempts: int | None
    on_failure_arn: str | None
    #: The `FilterCriteria` patterns (parsed JSON); a record passes when any matches.
    filters: tuple[Mapping[str, Any], ...] = ()
    enabled: bool = True
    #: `MaximumRecordAgeInSeconds` (None: infinite), scaled by the local stack's time scale.
    maximum_record_age: int | None = None
    #: `ParallelizationFactor`: batches of a shard processed at once, each partition key's (each
    #: item's) records in order (the testing kit's check plays it; the local stack reads a
    #: shard one batch at a time).
    parallelization_factor: int = 1


@dataclass(frozen=True)
class ScheduleEventSpec:
    name: str
    expression: str
    input: str | None
    enabled: bool = True
    #: "ScheduleV2" (EventBridge Scheduler) or "Schedule" (an EventBridge rule).
    kind: str = "ScheduleV2"


@dataclass(frozen=True)
class KinesisEventSpec:
    """A Kinesis Data Streams trigger (SAM `Kinesis` event, or a mapping from a stream's ARN).
    The rules are those of `StreamEventSpec`; `FilterCriteria` are not emulated (listed as
    skipped: every record is delivered)."""

    name: str
    #: The stream's name (from its ARN, `...:stream/NAME`).
    stream_name: str
    batch_size: int
    batching_window: float
    report_batch_item_failures: bool
    starting_position: str
    bisect_on_error: bool
    maximum_retry_attempts: int | None
    on_failure_arn: str | None
    filters: tuple[Mapping[str, Any], ...] = ()
    enabled: bool = True
    maximum_record_age: int | None = None
    parallelization_factor: int = 1


EventSpec = SqsEventSpec | KafkaEventSpec | StreamEventSpec | KinesisEventSpec | ScheduleEventSpec


def _report_failures(properties: Mapping[str, Any]) -> bool:
    return "ReportBatchItemFailures" in (properties.get("FunctionResponseTypes") or [])


def _enabled(properties: Mapping[str, Any]) -> bool:
    return str(properties.get("Enabled", "true")).lower() != "false"


def sam_event(name: str, event: Mapping[str, Any]) -> EventSpec | None:
    kind = event.get("Type")
    p: Mapping[str, Any] = event.get("Properties") or {}
    if kind == "SQS":
        return SqsEventSpec(
            name=name,
            queue_arn=str(p["Queue"]),
            batch_size=int(p.get("BatchSize", 10)),
            batching_window=float(p.get("MaximumBatchingWindowInSeconds", 0)),
            report_batch_item_failures=_report_failures(p),
            enabled=_enabled(p),
        )
    if kind in ("MSK", "SelfManagedKafka"):
        return _kafka_event(name, p, self_managed=kind == "SelfManagedKafka")
    if kind == "DynamoDB":
        return _stream_event(name, p, str(p["Stream"]))
    if kind == "Kinesis":
        return _kinesis_event(name, p, str(p["Stream"]))
    if kind in ("ScheduleV2", "Schedule"):
        return ScheduleEventSpec(
            name=name,
            expression=str(p["ScheduleExpression"]),
            input=str(p["Input"]) if "Input" in p else None,
            enabled=str(p.get("State", "ENABLED")).upper() != "DISABLED" and _enabled(p),
            kind=str(kind),
        )
    return None


def _kafka_event(name: str, p: Mapping[str, Any], *, self_managed: bool) -> KafkaEventSpec:
    group = (
        (p.get("AmazonManagedKafkaEventSourceConfig") or {}).get("ConsumerGroupId")
        or (p.get("SelfManagedKafkaEventSourceConfig") or {}).get("ConsumerGroupId")
        or f"local-{name}"
    )
    destination = ((p.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
    retries = p.get("MaximumRetryAttempts")
    endpoints = (p.get("SelfManagedEventSource") or {}).get("Endpoints") or {}
    servers = p.get("KafkaBootstrapServers") or endpoints.get("KafkaBootstrapServers") or []
    return KafkaEventSpec(
        name=name,
        topics=tuple(str(t) for t in p.get("Topics", [])),
        batch_size=int(p.get("BatchSize", 100)),
        batching_window=float(p.get("MaximumBatchingWindowInSeconds", 0.5)),
        report_batch_item_failures=_report_failures(p),
        starting_position=str(p.get("StartingPosition", "TRIM_HORIZON")),
        consumer_group=str(group),
        maximum_retry_attempts=None if retries in (None, -1, "-1") else int(retries),
        on_failure_arn=str(destination) if destination else None,
        enabled=_enabled(p),
        self_managed=self_managed,
        cluster_arn=None
        if self_managed
        else str(p.get("Stream") or p.get("EventSourceArn") or "") or None,
        bootstrap_servers=tuple(str(server) for server in servers) if self_managed else (),
    )


def mapping_event(name: str, p: Mapping[str, Any], queue_arns: Collection[str]) -> EventSpec:
    """An `AWS::Lambda::EventSourceMapping`: a table's stream, SQS when its source is one of
    `queue_arns`, else Kafka."""
    source = str(p.get("EventSourceArn", ""))
    if ":dynamodb:" in source and "/stream/" in source:
        return _stream_event(name, p, source)
    if ":kinesis:" in source and ":stream/" in source:
        return _kinesis_event(name, p, source)
    if source in queue_arns:
        return SqsEventSpec(
            name=name,
            queue_arn=source,
            batch_size=int(p.get("BatchSize", 10)),
            batching_window=float(p.get("MaximumBatchingWindowInSeconds", 0)),
            report_batch_item_failures=_report_failures(p),
            enabled=_enabled(p),
        )
    return _kafka_event(name, p, self_managed="SelfManagedEventSource" in p)


def _filters(p: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    patterns: list[Mapping[str, Any]] = []
    for entry in (p.get("FilterCriteria") or {}).get("Filters") or []:
        text = entry.get("Pattern") if isinstance(entry, Mapping) else None
        try:
            pattern = json.loads(text) if isinstance(text, str) else text
        except ValueError:
            raise TemplateError(f"FilterCriteria pattern is not JSON: {text!r}") from None
        if not isinstance(pattern, Mapping):
            raise TemplateError(f"FilterCriteria pattern is not a JSON object: {text!r}")
        patterns.append(pattern)
    return tuple(patterns)


def _stream_options(p: Mapping[str, Any]) -> dict[str, Any]:
    """What DynamoDB and Kinesis stream triggers share."""
    destination = ((p.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
    retries = p.get("MaximumRetryAttempts")
    age = p.get("MaximumRecordAgeInSeconds")
    return {
        "batch_size": int(p.get("BatchSize", 100)),
        "batching_window": float(p.get("MaximumBatchingWindowInSeconds", 0)),
        "report_batch_item_failures": _report_failures(p),
        "starting_position": str(p.get("StartingPosition", "TRIM_HORIZON")),
        "bisect_on_error": str(p.get("BisectBatchOnFunctionError", "false")).lower() == "true",
        "maximum_retry_attempts": None if retries in (None, -1, "-1") else int(retries),
        "on_failure_arn": str(destination) if destination else None,
        "filters": _filters(p),
        "enabled": _enabled(p),
        "maximum_record_age": None if age in (None, -1, "-1") else int(age),
        "parallelization_factor": int(p.get("ParallelizationFactor", 1)),
    }


def _kinesis_event(name: str, p: Mapping[str, Any], stream_arn: str) -> KinesisEventSpec:
    """A Kinesis trigger; the stream is named by its ARN (`...:stream/NAME`)."""
    if ":stream/" not in stream_arn:
        raise TemplateError(f"{name}: {stream_arn!r} is not a Kinesis stream ARN")
    stream_name = stream_arn.split(":stream/", 1)[1].split("/", 1)[0]
    options = _stream_options(p) | {"filters": ()}
    return KinesisEventSpec(name=name, stream_name=stream_name, **options)


def _stream_event(name: str, p: Mapping[str, Any], stream_arn: str) -> StreamEventSpec:
    """A stream trigger; the table is named by the stream ARN (`...:table/NAME/stream/...`)."""
    try:
        table_name = stream_arn.split(":table/", 1)[1].split("/stream/", 1)[0]
    except IndexError:
        raise TemplateError(f"{name}: {stream_arn!r} is not a DynamoDB stream ARN") from None
    return StreamEventSpec(name=name, table_name=table_name, **_stream_options(p))
