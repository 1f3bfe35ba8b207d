"""CloudFormation as the local stack reads it: `load_template()` parses the YAML with the short
tags (`!Ref`, `!GetAtt`, `!Sub`, `!If`, ...) turned into their long forms (`{"Ref": ...}`,
`{"Fn::GetAtt": [...]}`), and `Resolver` evaluates the intrinsic functions against parameters,
conditions and the local physical names.

Physical names: a resource's own name property when the template gives one (`QueueName`,
`TableName`, `FunctionName`), else `{stack name}-{logical ID}`, as CloudFormation names them
("generates a unique physical ID", the stack and logical names in it; locally without the
random suffix). An unnamed FIFO queue's name ends in `.fifo`, as SQS requires of every FIFO
queue, within SQS's 80 characters. Queue URLs are those of the local
SQS endpoint (`{endpoint}/{account}/{name}`), ARNs use the local region and account; a table's
`StreamArn` is `{table ARN}/stream/local` (the stream poller finds the real one by table name).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped,unused-ignore]

ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"
DEFAULT_STACK_NAME = "lambda-inbox"
NO_VALUE = object()
FIFO_SUFFIX = ".fifo"
SQS_NAME_LIMIT = 80


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
        named = ("AWS::Kinesis::Stream", "AWS::Events::EventBus", "AWS::Events::Rule")
        if resource.get("Type") in named and "Name" in properties:
            return str(self.resolve(properties["Name"]))
        generated = f"{self.stack_name}-{logical_id}"
        if resource.get("Type") == "AWS::SQS::Queue":
            fifo = str(self.resolve(properties.get("FifoQueue", False))).lower() == "true"
            suffix = FIFO_SUFFIX if fifo else ""
            return generated[: SQS_NAME_LIMIT - len(suffix)] + suffix
        return generated

    def arn(self, logical_id: str) -> str:
        kind = self.resources[logical_id]["Type"]
        name = self.physical_name(logical_id)
        if kind == "AWS::SQS::Queue":
            return f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:{name}"
        if kind == "AWS::DynamoDB::Table":
            return f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
        if kind == "AWS::Kinesis::Stream":
            return f"arn:{PARTITION}:kinesis:{REGION}:{ACCOUNT}:stream/{name}"
        if kind == "AWS::SNS::Topic":
            return f"arn:{PARTITION}:sns:{REGION}:{ACCOUNT}:{name}"
        if kind == "AWS::Events::EventBus":
            return f"arn:{PARTITION}:events:{REGION}:{ACCOUNT}:event-bus/{name}"
        if kind == "AWS::Events::Rule":
            return f"arn:{PARTITION}:events:{REGION}:{ACCOUNT}:rule/{name}"
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
            if kind == "AWS::SNS::Topic":  # a topic's Ref is its ARN
                return self.arn(name)
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
        if attribute in ("StreamArn", "LatestStreamArn"):
            return f"{self.arn(logical_id)}/stream/local"
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
