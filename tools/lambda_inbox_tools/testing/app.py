"""A SAM template's tables, queues and Kinesis streams on local endpoints, and its functions loaded
in this process, for a consumer's tests.

`running_local_app(template, dynamodb_endpoint=..., sqs_endpoint=...)`, a context manager, reads
the template the way
`lambda-inbox local` does (parameters, `Globals`, intrinsic functions), creates its tables,
queues and Kinesis streams (on the moto server) under a stack name of its own (so tests sharing
one DynamoDB Local never meet), points the process at the endpoints with offline credentials
while the block runs, and deletes what it created afterwards. `app.function("LogicalId")` imports the function's handler module with the
function's environment from the template, as a cold start does.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..local.environment import function_environment, invocation_environments, lambda_variables
from ..local.invoker import boto_clients, load_handler_module
from ..local.provision import provision
from ..local.stack import read_local_stack
from ..local.template import FunctionSpec, Stack
from ..services.items import scan_plain
from ..services.offline import (
    OFFLINE_AWS_ENV,
    inherited_aws_settings,
    local_client,
    patched_environ,
)
from .context import FakeLambdaContext


@dataclass
class LocalFunction:
    """One function of the template, loaded: call it as Lambda calls the handler."""

    spec: FunctionSpec
    module: ModuleType

    @property
    def handler(self) -> Any:
        return getattr(self.module, self.spec.handler.rsplit(".", 1)[1])

    @property
    def clients(self) -> list[Any]:
        """The botocore clients the handler module holds (module globals and its `consumer`'s):
        where the kit's faults and crashes are injected."""
        return boto_clients(self.module)

    def context(self) -> FakeLambdaContext:
        """A context whose time left counts down from the template's `Timeout`."""
        return FakeLambdaContext(self.spec.timeout * 1000, function_name=self.spec.name)

    def __call__(self, event: Mapping[str, Any], context: Any = None) -> Any:
        """The handler's response to `event`, through JSON as Lambda returns it, with the
        function's environment set for this invocation (its thread) as Lambda sets it."""
        with function_environment(lambda_variables(self.spec)):
            response = self.handler(json.loads(json.dumps(event)), context or self.context())
        return json.loads(json.dumps(response, default=str))


@dataclass
class LocalApp:
    """The template's resources on the local endpoints (names from `stack`)."""

    stack: Stack
    dynamodb: Any
    sqs: Any
    _functions: dict[str, LocalFunction] = field(default_factory=dict)

    def table_name(self, logical_id: str) -> str:
        return self.stack.table(logical_id).name

    def queue_url(self, logical_id: str) -> str:
        return self.stack.queue(logical_id).url

    def items(self, table: str) -> list[dict[str, Any]]:
        """Every item of the table `table` (a logical ID), as plain Python values, strongly
        consistent."""
        return scan_plain(self.dynamodb, self.table_name(table))

    def messages(self, queue: str, *, wait_seconds: int = 0) -> list[dict[str, Any]]:
        """Every message now visible in the queue `queue` (a logical ID), received and deleted."""
        url = self.queue_url(queue)
        received: list[dict[str, Any]] = []
        while True:
            answer = self.sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=wait_seconds,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            batch = answer.get("Messages", [])
            if not batch:
                return received
            received.extend(batch)
            self.sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)
                ],
            )
            wait_seconds = 0

    def function(self, logical_id: str, *, fresh: bool = False) -> LocalFunction:
        """The function `logical_id`, imported once (`fresh=True`: imported anew, as another
        execution environment's cold start)."""
        if fresh or logical_id not in self._functions:
            spec = self.stack.function(logical_id)
            self._functions[logical_id] = LocalFunction(spec, load_handler_module(spec))
        return self._functions[logical_id]


@contextlib.contextmanager
def running_local_app(
    template: str | Path,
    *,
    dynamodb_endpoint: str,
    sqs_endpoint: str,
    parameters: Mapping[str, str] | None = None,
    stack_name: str | None = None,
) -> Iterator[LocalApp]:
    """The template's tables and queues created on the endpoints (see the module docstring),
    removed when the block ends. (In a pytest test, the kit's `local_app` fixture opens one on
    the plugin's endpoints.)"""
    name = stack_name or f"t{uuid.uuid4().hex[:10]}"
    environment: dict[str, str | None] = dict.fromkeys(inherited_aws_settings(os.environ))
    environment |= {
        **OFFLINE_AWS_ENV,
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint,
        "AWS_ENDPOINT_URL_SQS": sqs_endpoint,
        "AWS_ENDPOINT_URL_KINESIS": sqs_endpoint,  # Kinesis streams on the same moto server
        "AWS_ENDPOINT_URL_SNS": sqs_endpoint,  # and the topics and buses feeding its queues
        "AWS_ENDPOINT_URL_EVENTBRIDGE": sqs_endpoint,
    }
    with patched_environ(environment), invocation_environments():
        stack = read_local_stack(
            Path(template), sqs_endpoint=sqs_endpoint, parameters=parameters, stack_name=name
        )
        dynamodb = local_client("dynamodb", dynamodb_endpoint)
        sqs = local_client("sqs", sqs_endpoint)
        kinesis = local_client("kinesis", sqs_endpoint)
        provision(
            stack,
            dynamodb=dynamodb,
            sqs=sqs,
            kinesis=kinesis,
            sns=local_client("sns", sqs_endpoint) if stack.routes else None,
            events=local_client("events", sqs_endpoint) if stack.routes else None,
            kafka_bootstrap=None,
            scale=1.0,
        )
        try:
            yield LocalApp(stack, dynamodb, sqs)
        finally:
            for stream in stack.kinesis_streams:
                with contextlib.suppress(Exception):
                    kinesis.delete_stream(StreamName=stream.name)
            for table in stack.tables:
                with contextlib.suppress(Exception):
                    dynamodb.delete_table(TableName=table.name)
            for queue in stack.queues:
                with contextlib.suppress(Exception):
                    sqs.delete_queue(QueueUrl=queue.url)
