"""Read template.yaml into the local stack's model: tables, queues, topics, functions, events.

`read_stack()` resolves parameters (defaults plus overrides), conditions, `Globals.Function` and
the intrinsic functions the local stack needs (`cfn`), reads each function's event sources
(`event_specs`) and returns a `Stack`: nothing about the application is written anywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cfn import (
    ACCOUNT,
    DEFAULT_STACK_NAME,
    PARTITION,
    REGION,
    Resolver,
    TemplateError,
    load_template,
)
from .event_specs import (
    EventSpec,
    KafkaEventSpec,
    KinesisEventSpec,
    ScheduleEventSpec,
    SqsEventSpec,
    StreamEventSpec,
    mapping_event,
    sam_event,
)
from .routes import ROUTE_RESOURCES, Routes, read_route

__all__ = [
    "ACCOUNT",
    "DEFAULT_STACK_NAME",
    "PARTITION",
    "REGION",
    "EventSpec",
    "FunctionSpec",
    "KafkaEventSpec",
    "KinesisEventSpec",
    "KinesisStreamSpec",
    "QueueSpec",
    "ScheduleEventSpec",
    "SqsEventSpec",
    "Stack",
    "StreamEventSpec",
    "TableSpec",
    "TemplateError",
    "load_template",
    "read_stack",
]

# ---------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class TableSpec:
    logical_id: str
    name: str
    attribute_definitions: list[dict[str, str]]
    key_schema: list[dict[str, str]]
    global_secondary_indexes: list[dict[str, Any]]
    local_secondary_indexes: list[dict[str, Any]]
    ttl_attribute: str | None
    #: `StreamSpecification.StreamViewType`, when the table has a stream.
    stream_view_type: str | None = None


@dataclass(frozen=True)
class QueueSpec:
    logical_id: str
    name: str
    url: str
    arn: str
    fifo: bool
    visibility_timeout: int
    #: SQS attributes other than VisibilityTimeout and RedrivePolicy, as strings.
    attributes: dict[str, str]
    dead_letter_arn: str | None = None
    max_receive_count: int | None = None


@dataclass
class FunctionSpec:
    logical_id: str
    name: str
    code_uri: Path
    handler: str
    timeout: int
    memory_size: int
    environment: dict[str, str]
    events: list[EventSpec] = field(default_factory=list)


@dataclass(frozen=True)
class KinesisStreamSpec:
    """An `AWS::Kinesis::Stream`, created on the moto server."""

    logical_id: str
    name: str
    arn: str
    shard_count: int = 1


@dataclass
class Stack:
    name: str
    parameters: dict[str, str]
    tables: list[TableSpec]
    queues: list[QueueSpec]
    functions: list[FunctionSpec]
    template_path: Path
    #: What the template declares and the local stack does not emulate, once each, by resource.
    skipped: list[str] = field(default_factory=list)
    kinesis_streams: list[KinesisStreamSpec] = field(default_factory=list)
    #: SNS subscriptions and EventBridge rules that feed the queues (`routes`).
    routes: Routes = field(default_factory=Routes)

    @property
    def topics(self) -> list[str]:
        found: list[str] = []
        for function in self.functions:
            for event in function.events:
                if isinstance(event, KafkaEventSpec):
                    found.extend(t for t in event.topics if t not in found)
        return found

    def queue_by_arn(self, arn: str) -> QueueSpec:
        for queue in self.queues:
            if queue.arn == arn:
                return queue
        raise TemplateError(f"no queue of the template has the ARN {arn}")

    def queue(self, logical_id: str) -> QueueSpec:
        for queue in self.queues:
            if queue.logical_id == logical_id:
                return queue
        raise KeyError(logical_id)

    def table(self, logical_id: str) -> TableSpec:
        for table in self.tables:
            if table.logical_id == logical_id:
                return table
        raise KeyError(logical_id)

    def function(self, logical_id: str) -> FunctionSpec:
        for function in self.functions:
            if function.logical_id == logical_id:
                return function
        raise KeyError(logical_id)

    def redrive_pairs(self) -> list[tuple[QueueSpec, QueueSpec]]:
        """(dead-letter queue, its source queue) from the queues' RedrivePolicy."""
        return [
            (self.queue_by_arn(queue.dead_letter_arn), queue)
            for queue in self.queues
            if queue.dead_letter_arn
        ]


# ---------------------------------------------------------------------------- reading


def _merge_globals(properties: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(defaults)
    for key, value in properties.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_globals(value, merged[key])
        else:
            merged[key] = value
    return merged


def _table(resolver: Resolver, logical_id: str, properties: Mapping[str, Any]) -> TableSpec:
    ttl = properties.get("TimeToLiveSpecification") or {}
    enabled = str(ttl.get("Enabled", "false")).lower() == "true"
    return TableSpec(
        logical_id=logical_id,
        name=resolver.physical_name(logical_id),
        attribute_definitions=list(properties.get("AttributeDefinitions", [])),
        key_schema=list(properties.get("KeySchema", [])),
        global_secondary_indexes=list(properties.get("GlobalSecondaryIndexes", [])),
        local_secondary_indexes=list(properties.get("LocalSecondaryIndexes", [])),
        ttl_attribute=str(ttl["AttributeName"]) if enabled and "AttributeName" in ttl else None,
        stream_view_type=(properties.get("StreamSpecification") or {}).get("StreamViewType"),
    )


_QUEUE_ATTRIBUTES = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
)


def _queue(resolver: Resolver, logical_id: str, properties: Mapping[str, Any]) -> QueueSpec:
    name = resolver.physical_name(logical_id)
    fifo = str(properties.get("FifoQueue", "false")).lower() == "true"
    attributes = {
        key: str(properties[key]).lower()
        if isinstance(properties[key], bool)
        else str(properties[key])
        for key in _QUEUE_ATTRIBUTES
        if key in properties
    }
    if fifo:
        attributes["FifoQueue"] = "true"
    redrive = properties.get("RedrivePolicy") or {}
    return QueueSpec(
        logical_id=logical_id,
        name=name,
        url=resolver.ref(logical_id),
        arn=resolver.arn(logical_id),
        fifo=fifo,
        visibility_timeout=int(properties.get("VisibilityTimeout", 30)),
        attributes=attributes,
        dead_letter_arn=redrive.get("deadLetterTargetArn"),
        max_receive_count=int(redrive["maxReceiveCount"]) if "maxReceiveCount" in redrive else None,
    )


#: Resources the local stack creates or runs.
EMULATED_RESOURCES = frozenset(
    {
        "AWS::DynamoDB::Table",
        "AWS::Kinesis::Stream",
        "AWS::SQS::Queue",
        "AWS::Serverless::Function",
        "AWS::Lambda::EventSourceMapping",
        *ROUTE_RESOURCES,
    }
)
#: Resources a local run has no use for (permissions, logs, alarms, packaging): not listed.
NOT_NEEDED_LOCALLY = (
    "AWS::IAM::",
    "AWS::Logs::",
    "AWS::CloudWatch::",
    "AWS::Serverless::LayerVersion",
    "AWS::Lambda::LayerVersion",
    "AWS::Lambda::Permission",
    "AWS::SQS::QueuePolicy",
    "AWS::SNS::TopicPolicy",
    "AWS::KMS::",
)


def read_stack(
    path: Path,
    *,
    parameters: Mapping[str, str] | None = None,
    stack_name: str = DEFAULT_STACK_NAME,
    sqs_endpoint: str = "http://127.0.0.1:4566",
    loaded: Mapping[str, Any] | None = None,
) -> Stack:
    """The local stack described by the template at `path` (`loaded`: its content, when the
    caller has already read it with `load_template`)."""
    template = load_template(path) if loaded is None else loaded
    resolver = Resolver(
        template, stack_name=stack_name, parameters=parameters or {}, sqs_endpoint=sqs_endpoint
    )
    function_globals: Mapping[str, Any] = (template.get("Globals") or {}).get("Function") or {}
    tables: list[TableSpec] = []
    queues: list[QueueSpec] = []
    functions: list[FunctionSpec] = []
    kinesis_streams: list[KinesisStreamSpec] = []
    mappings: list[tuple[str, Mapping[str, Any]]] = []
    by_logical_id: dict[str, FunctionSpec] = {}
    skipped: list[str] = []
    routes = Routes()
    for logical_id, resource in template["Resources"].items():
        if not resolver.included(logical_id):
            continue
        kind = resource.get("Type")
        raw = resource.get("Properties") or {}
        if kind not in EMULATED_RESOURCES and not str(kind).startswith(NOT_NEEDED_LOCALLY):
            skipped.append(f"{logical_id} ({kind}): not created locally")
        if kind == "AWS::DynamoDB::Table":
            tables.append(_table(resolver, logical_id, resolver.resolve(raw)))
        elif kind == "AWS::SQS::Queue":
            queues.append(_queue(resolver, logical_id, resolver.resolve(raw)))
        elif kind == "AWS::Kinesis::Stream":
            properties = resolver.resolve(raw)
            kinesis_streams.append(
                KinesisStreamSpec(
                    logical_id,
                    resolver.physical_name(logical_id),
                    resolver.arn(logical_id),
                    int(properties.get("ShardCount", 1)),
                )
            )
        elif kind in ROUTE_RESOURCES:
            read_route(routes, resolver, logical_id, kind, resolver.resolve(raw), skipped)
        elif kind == "AWS::Lambda::EventSourceMapping":
            mappings.append((logical_id, resolver.resolve(raw)))
        elif kind == "AWS::Serverless::Function":
            props = resolver.resolve(_merge_globals(raw, function_globals))
            variables = (props.get("Environment") or {}).get("Variables") or {}
            function = FunctionSpec(
                logical_id=logical_id,
                name=resolver.physical_name(logical_id),
                code_uri=(path.parent / str(props.get("CodeUri", "."))).resolve(),
                handler=str(props["Handler"]),
                timeout=int(props.get("Timeout", 3)),
                memory_size=int(props.get("MemorySize", 128)),
                environment={k: str(v) for k, v in variables.items()},
            )
            for event_name, event in (props.get("Events") or {}).items():
                spec = sam_event(event_name, event)
                if spec is not None:
                    function.events.append(spec)
                    if not isinstance(spec, StreamEventSpec) and (
                        (event.get("Properties") or {}).get("FilterCriteria")
                    ):
                        skipped.append(
                            f"{logical_id}.{event_name}: FilterCriteria not emulated "
                            "(every message is delivered)"
                        )
                else:
                    kind_of_event = event.get("Type") if isinstance(event, dict) else event
                    skipped.append(
                        f"{logical_id}.{event_name} (event {kind_of_event}): not emulated"
                    )
            functions.append(function)
            by_logical_id[logical_id] = function
    by_name = {f.name: f for f in functions}
    for logical_id, p in mappings:
        target = str(p.get("FunctionName", ""))
        owner = by_name.get(target) or by_logical_id.get(target)
        if owner is None:
            raise TemplateError(f"{logical_id}: FunctionName {target} is not a function here")
        owner.events.append(mapping_event(logical_id, p, {q.arn for q in queues}))
    return Stack(
        name=stack_name,
        parameters={
            k: ",".join(v) if isinstance(v, list) else v for k, v in resolver.parameters.items()
        },
        tables=tables,
        queues=queues,
        functions=functions,
        template_path=path,
        skipped=skipped,
        kinesis_streams=kinesis_streams,
        routes=routes,
    )
