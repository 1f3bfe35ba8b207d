"""Read template.yaml into the local stack's model: tables, queues, topics, functions, events.

`load_template()` parses the YAML with the CloudFormation short tags (`!Ref`, `!GetAtt`, `!Sub`,
`!If`, ...) turned into their long forms (`{"Ref": ...}`, `{"Fn::GetAtt": [...]}`), so the same
function serves every script that needs the template. `read_stack()` resolves parameters (defaults
plus overrides), conditions, `Globals.Function` and the intrinsic functions the local stack needs,
and returns a `Stack`: nothing about the application is written anywhere else.

Physical names: a resource's own name property when the template gives one (`QueueName`,
`TableName`, `FunctionName`), else `{stack name}-{logical ID}`. Queue URLs are those of the local
SQS endpoint (`{endpoint}/{account}/{name}`), ARNs use the local region and account.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped,unused-ignore]

ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"
DEFAULT_STACK_NAME = "lambda-inbox"
NO_VALUE = object()


class TemplateError(ValueError):
    """The template uses something the local stack cannot resolve."""


class _CfnLoader(yaml.SafeLoader):  # type: ignore[misc,name-defined,unused-ignore]
    """SafeLoader plus the CloudFormation short-form tags."""


def _intrinsic(loader: Any, suffix: str, node: Any) -> dict[str, Any]:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix == "Condition":
        return {"Condition": value}
    return {name: value}


_CfnLoader.add_multi_constructor("!", _intrinsic)


def load_template(path: Path) -> dict[str, Any]:
    """template.yaml as plain data, intrinsic functions in their long form."""
    try:
        with path.open(encoding="utf-8") as stream:
            # _CfnLoader is a SafeLoader (plus the CloudFormation short-form tags).
            template = yaml.load(stream, Loader=_CfnLoader)  # nosec B506
    except OSError as error:
        raise TemplateError(f"cannot read {path}: {error.strerror}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        where = getattr(error, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise TemplateError(f"{path} is not valid YAML{at}: {problem}") from None
    if not isinstance(template, dict) or not isinstance(template.get("Resources"), dict):
        raise TemplateError(f"{path} is not a CloudFormation template (no Resources)")
    return template


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


@dataclass(frozen=True)
class ScheduleEventSpec:
    name: str
    expression: str
    input: str | None
    enabled: bool = True


EventSpec = SqsEventSpec | KafkaEventSpec | ScheduleEventSpec


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


# ---------------------------------------------------------------------------- resolution


class Resolver:
    """Evaluates the intrinsic functions against parameters, conditions and physical names."""

    def __init__(
        self,
        template: Mapping[str, Any],
        *,
        stack_name: str,
        parameters: Mapping[str, str],
        sqs_endpoint: str,
    ) -> None:
        self.template = template
        self.resources: Mapping[str, Any] = template["Resources"]
        self.stack_name = stack_name
        self.sqs_endpoint = sqs_endpoint.rstrip("/")
        declared: Mapping[str, Any] = template.get("Parameters") or {}
        unknown = sorted(set(parameters) - set(declared))
        if unknown:
            raise TemplateError(f"unknown template parameter(s): {', '.join(unknown)}")
        self.parameters: dict[str, Any] = {}
        for name, spec in declared.items():
            value = parameters.get(name, spec.get("Default"))
            if value is None:
                raise TemplateError(f"parameter {name} has no default: pass a value")
            if spec.get("Type") == "CommaDelimitedList":
                self.parameters[name] = [] if value == "" else str(value).split(",")
            else:
                self.parameters[name] = str(value)
        self._conditions: dict[str, bool] = {}

    # -- names
    def physical_name(self, logical_id: str) -> str:
        resource = self.resources[logical_id]
        properties = resource.get("Properties") or {}
        for key in ("QueueName", "TableName", "FunctionName", "LayerName", "TopicName"):
            if key in properties:
                return str(self.resolve(properties[key]))
        return f"{self.stack_name}-{logical_id}"

    def arn(self, logical_id: str) -> str:
        kind = self.resources[logical_id]["Type"]
        name = self.physical_name(logical_id)
        if kind == "AWS::SQS::Queue":
            return f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:{name}"
        if kind == "AWS::DynamoDB::Table":
            return f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
        if kind in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
            return f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:{name}"
        return f"arn:{PARTITION}:local:{REGION}:{ACCOUNT}:{logical_id}"

    def ref(self, name: str) -> Any:
        pseudo = {
            "AWS::StackName": self.stack_name,
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": PARTITION,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": NO_VALUE,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        if name in self.resources:
            kind = self.resources[name]["Type"]
            if kind == "AWS::SQS::Queue":
                return f"{self.sqs_endpoint}/{ACCOUNT}/{self.physical_name(name)}"
            if kind in ("AWS::Serverless::LayerVersion", "AWS::Lambda::LayerVersion"):
                return f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:layer:{name}:1"
            return self.physical_name(name)
        raise TemplateError(f"!Ref {name}: no such parameter or resource")

    def get_att(self, logical_id: str, attribute: str) -> Any:
        if logical_id not in self.resources:
            raise TemplateError(f"!GetAtt {logical_id}.{attribute}: no such resource")
        if attribute == "Arn":
            return self.arn(logical_id)
        if attribute in ("QueueName", "TableName"):
            return self.physical_name(logical_id)
        if attribute == "QueueUrl":
            return self.ref(logical_id)
        raise TemplateError(f"!GetAtt {logical_id}.{attribute} is not known locally")

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            conditions = self.template.get("Conditions") or {}
            if name not in conditions:
                raise TemplateError(f"no condition {name}")
            self._conditions[name] = bool(self.resolve(conditions[name]))
        return self._conditions[name]

    def _sub(self, text: str, variables: Mapping[str, Any]) -> str:
        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name and name.split(".", 1)[0] in self.resources:
                resource, attribute = name.split(".", 1)
                return str(self.get_att(resource, attribute))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", replace, text)

    def resolve(self, node: Any) -> Any:
        """The value of `node` with every intrinsic function evaluated (`NO_VALUE` dropped)."""
        if isinstance(node, list):
            return [v for v in (self.resolve(item) for item in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            handler = self._functions().get(key)
            if handler is not None:
                return handler(arg)
        resolved = {k: self.resolve(v) for k, v in node.items()}
        return {k: v for k, v in resolved.items() if v is not NO_VALUE}

    def _functions(self) -> dict[str, Callable[[Any], Any]]:
        r = self.resolve
        return {
            "Ref": lambda arg: self.ref(str(arg)),
            "Condition": lambda arg: self.condition(str(arg)),
            "Fn::GetAtt": lambda arg: self.get_att(
                *(arg if isinstance(arg, list) else str(arg).split(".", 1))
            ),
            "Fn::Sub": lambda arg: (
                self._sub(arg, {})
                if isinstance(arg, str)
                else self._sub(arg[0], {k: r(v) for k, v in arg[1].items()})
            ),
            "Fn::If": lambda arg: r(arg[1]) if self.condition(arg[0]) else r(arg[2]),
            "Fn::Equals": lambda arg: r(arg[0]) == r(arg[1]),
            "Fn::Not": lambda arg: not r(arg[0]),
            "Fn::And": lambda arg: all(r(item) for item in arg),
            "Fn::Or": lambda arg: any(r(item) for item in arg),
            "Fn::Join": lambda arg: str(arg[0]).join(str(v) for v in r(arg[1])),
            "Fn::Select": lambda arg: r(arg[1])[int(r(arg[0]))],
            "Fn::Split": lambda arg: str(r(arg[1])).split(str(arg[0])),
        }

    def included(self, logical_id: str) -> bool:
        condition = self.resources[logical_id].get("Condition")
        return True if condition is None else self.condition(str(condition))


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


def _report_failures(properties: Mapping[str, Any]) -> bool:
    return "ReportBatchItemFailures" in (properties.get("FunctionResponseTypes") or [])


def _enabled(properties: Mapping[str, Any]) -> bool:
    return str(properties.get("Enabled", "true")).lower() != "false"


#: Resources the local stack creates or runs.
EMULATED_RESOURCES = frozenset(
    {
        "AWS::DynamoDB::Table",
        "AWS::SQS::Queue",
        "AWS::Serverless::Function",
        "AWS::Lambda::EventSourceMapping",
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
    "AWS::KMS::",
)


def _sam_event(name: str, event: Mapping[str, Any]) -> EventSpec | None:
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
        return _kafka_event(name, p)
    if kind in ("ScheduleV2", "Schedule"):
        return ScheduleEventSpec(
            name=name,
            expression=str(p["ScheduleExpression"]),
            input=str(p["Input"]) if "Input" in p else None,
            enabled=str(p.get("State", "ENABLED")).upper() != "DISABLED" and _enabled(p),
        )
    return None


def _kafka_event(name: str, p: Mapping[str, Any]) -> KafkaEventSpec:
    group = (
        (p.get("AmazonManagedKafkaEventSourceConfig") or {}).get("ConsumerGroupId")
        or (p.get("SelfManagedKafkaEventSourceConfig") or {}).get("ConsumerGroupId")
        or f"local-{name}"
    )
    destination = ((p.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
    retries = p.get("MaximumRetryAttempts")
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
    )


def _mapping_event(name: str, p: Mapping[str, Any], stack_queues: list[QueueSpec]) -> EventSpec:
    """An `AWS::Lambda::EventSourceMapping`: SQS when its source is a queue, else Kafka."""
    source = str(p.get("EventSourceArn", ""))
    if any(queue.arn == source for queue in stack_queues):
        return SqsEventSpec(
            name=name,
            queue_arn=source,
            batch_size=int(p.get("BatchSize", 10)),
            batching_window=float(p.get("MaximumBatchingWindowInSeconds", 0)),
            report_batch_item_failures=_report_failures(p),
            enabled=_enabled(p),
        )
    return _kafka_event(name, p)


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
    mappings: list[tuple[str, Mapping[str, Any]]] = []
    by_logical_id: dict[str, FunctionSpec] = {}
    skipped: list[str] = []
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
                spec = _sam_event(event_name, event)
                if spec is not None:
                    function.events.append(spec)
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
        owner.events.append(_mapping_event(logical_id, p, queues))
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
    )
