"""The local stack: services started, the template provisioned, every function event polled.

`LocalStack` reads template.yaml (with the local parameter overrides below), starts the
services, creates the tables, queues and topics, loads the functions (or connects to an invoke
endpoint) and runs one poller per event of the template.

Local parameter overrides (each can be overridden again with `--parameter NAME=VALUE`):
`MskClusterArn` = the mock cluster (so the Kafka mapping and its failure queue exist) and
`NotifyLeaseSeconds` = 5 (leases shorter than the scaled visibility timeout, as in AWS).
`read_local_stack` applies them; `make sam-local` reads the stack with it too, so the containers'
environment names the tables and queues this stack creates.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import boto3

from ..services.offline import LOCAL_CLIENT_CONFIG, OFFLINE_AWS_ENV
from ..services.queues import queue_depth
from .backends import Endpoints, kafka_mock_cluster, local_services
from .environment import invocation_environments
from .invoker import EndpointInvoker, InProcessInvoker, Invoker
from .kafka_poller import LOCAL_CLUSTER_ARN, KafkaPoller
from .kinesis_poller import KinesisPoller
from .provision import provision
from .scheduler import Scheduler, UnsupportedSchedule
from .sqs_poller import SqsPoller
from .stream_poller import ShardPoller, StreamPoller
from .template import (
    DEFAULT_STACK_NAME,
    REGION,
    FunctionSpec,
    KafkaEventSpec,
    KinesisEventSpec,
    ScheduleEventSpec,
    SqsEventSpec,
    Stack,
    StreamEventSpec,
    load_template,
    read_stack,
)

#: Local values for parameters of this repository's template (a Kafka trigger on the mock
#: cluster, a lease shorter than the scaled visibility timeout). Applied to any template only
#: where it declares a parameter of that name.
LOCAL_PARAMETERS = {"MskClusterArn": LOCAL_CLUSTER_ARN, "NotifyLeaseSeconds": "5"}


def read_local_stack(
    template: Path,
    *,
    sqs_endpoint: str,
    parameters: Mapping[str, str] | None = None,
    stack_name: str = DEFAULT_STACK_NAME,
    local_defaults: Mapping[str, str] | None = None,
) -> Stack:
    """The template's stack: `LOCAL_PARAMETERS` and `local_defaults` for the parameters it
    declares, then `parameters` (the user's: an undeclared one is an error); resources are named
    `{stack_name}-{LogicalId}`."""
    loaded = load_template(template)
    declared = set(loaded.get("Parameters") or {})
    defaults = {**LOCAL_PARAMETERS, **(local_defaults or {})}
    return read_stack(
        template,
        loaded=loaded,
        parameters={
            **{name: value for name, value in defaults.items() if name in declared},
            **(parameters or {}),
        },
        sqs_endpoint=sqs_endpoint,
        stack_name=stack_name,
    )


def client(service: str, endpoint: str) -> Any:
    make: Any = boto3.client
    return make(service, endpoint_url=endpoint, region_name=REGION, config=LOCAL_CLIENT_CONFIG)


class LocalStack:
    def __init__(
        self,
        stack: Stack,
        endpoints: Endpoints,
        invoker: Invoker,
        *,
        scale: float,
        invoke_endpoint: str | None = None,
    ) -> None:
        self.stack = stack
        self.endpoints = endpoints
        self.invoker = invoker
        self.scale = scale
        #: None: the functions run in this process.
        self.invoke_endpoint = invoke_endpoint
        self.in_process = invoke_endpoint is None
        self.dynamodb = client("dynamodb", endpoints.dynamodb)
        self.sqs = client("sqs", endpoints.sqs)
        self.streams = client("dynamodbstreams", endpoints.dynamodb)
        #: Kinesis streams live on the moto server, beside the queues.
        self.kinesis = client("kinesis", endpoints.sqs)
        self.sqs_pollers: list[SqsPoller] = []
        #: DynamoDB Streams and Kinesis pollers.
        self.stream_pollers: list[ShardPoller] = []
        self.kafka_pollers: list[KafkaPoller] = []
        self.schedulers: list[Scheduler] = []
        self.skipped: list[str] = list(stack.skipped)
        for function in stack.functions:
            for event in function.events:
                if not event.enabled:
                    continue
                if isinstance(event, SqsEventSpec):
                    queue = stack.queue_by_arn(event.queue_arn)
                    self.sqs_pollers.append(
                        SqsPoller(self.sqs, function, event, queue, invoker, scale=scale)
                    )
                elif isinstance(event, KafkaEventSpec):
                    if endpoints.kafka_bootstrap is None:  # running_stack starts it for topics
                        raise ValueError(f"no Kafka cluster for the topics of {function.name}")
                    failures = self._failure_queue(function.logical_id, event)
                    self.kafka_pollers.append(
                        KafkaPoller(
                            endpoints.kafka_bootstrap,
                            function,
                            event,
                            invoker,
                            sqs=self.sqs,
                            on_failure_url=failures,
                        )
                    )
                elif isinstance(event, StreamEventSpec | KinesisEventSpec):
                    self.stream_pollers.append(self._shard_poller(function, event))
                elif isinstance(event, ScheduleEventSpec):
                    try:
                        self.schedulers.append(Scheduler(function, event, invoker, scale))
                    except UnsupportedSchedule as error:
                        self.skipped.append(f"{function.logical_id}.{event.name}: {error}")

    def _shard_poller(
        self, function: FunctionSpec, event: StreamEventSpec | KinesisEventSpec
    ) -> ShardPoller:
        """The poller of a DynamoDB stream or a Kinesis stream trigger."""
        options: dict[str, Any] = {
            "sqs": self.sqs,
            "on_failure_url": self._failure_queue(function.logical_id, event),
            "scale": self.scale,
        }
        if isinstance(event, KinesisEventSpec):
            return KinesisPoller(self.kinesis, function, event, self.invoker, **options)
        return StreamPoller(self.dynamodb, self.streams, function, event, self.invoker, **options)

    def _failure_queue(
        self, function: str, event: KafkaEventSpec | StreamEventSpec | KinesisEventSpec
    ) -> str | None:
        """The URL of the event's on-failure destination when it is one of the template's
        queues; any other destination is listed as not emulated."""
        arn = event.on_failure_arn
        if not arn:
            return None
        for queue in self.stack.queues:
            if queue.arn == arn:
                return queue.url
        self.skipped.append(
            f"{function}.{event.name}: on-failure destination {arn} is not a queue of the "
            "template; its on-failure records are not written locally"
        )
        return None

    def runners(self) -> list[SqsPoller | KafkaPoller | ShardPoller | Scheduler]:
        return [*self.sqs_pollers, *self.kafka_pollers, *self.stream_pollers, *self.schedulers]

    def start(self) -> None:
        for runner in self.runners():
            runner.start()

    def stop(self) -> None:
        for runner in reversed(self.runners()):
            runner.stop()

    def queue_depth(self, url: str) -> int:
        """Messages in the queue: visible, in flight and delayed."""
        return queue_depth(self.sqs, url, in_flight=True, delayed=True)

    def pending(self) -> int:
        """Messages still to be processed: in the polled queues, Kafka records not committed,
        stream records read and not done (and 1 per stream whose last read found records)."""
        total = sum(self.queue_depth(p.queue.url) for p in self.sqs_pollers)
        total += sum(p.pending() for p in self.stream_pollers)
        return total + sum(p.lag() for p in self.kafka_pollers)


@contextlib.contextmanager
def running_stack(
    template: Path,
    *,
    backend: str = "dynamodb-local",
    scale: float = 1 / 30,
    invoke_endpoint: str | None = None,
    parameters: Mapping[str, str] | None = None,
    local_defaults: Mapping[str, str] | None = None,
    dynamodb_endpoint: str | None = None,
    sqs_endpoint: str | None = None,
    stack_name: str = DEFAULT_STACK_NAME,
    say: Callable[[str], None] = print,
) -> Iterator[LocalStack]:
    """Services up (or the given running ones), template provisioned, functions loaded; pollers
    not started yet.

    The functions read the process environment (endpoints, table names, offline credentials), so
    the stack sets it while it runs and restores it afterwards.
    """
    saved = dict(os.environ)
    try:
        for name in list(os.environ):
            if name.startswith("AWS_ENDPOINT_URL") or name in (
                "AWS_PROFILE",
                "AWS_DEFAULT_PROFILE",
            ):
                del os.environ[name]
        os.environ.update(OFFLINE_AWS_ENV)
        with contextlib.ExitStack() as services:
            services.enter_context(invocation_environments())
            endpoints = services.enter_context(
                local_services(
                    backend=backend,
                    say=say,
                    dynamodb_endpoint=dynamodb_endpoint,
                    sqs_endpoint=sqs_endpoint,
                )
            )
            stack = read_local_stack(
                template,
                sqs_endpoint=endpoints.sqs,
                parameters=parameters,
                stack_name=stack_name,
                local_defaults=local_defaults,
            )
            if stack.topics:
                bootstrap = services.enter_context(kafka_mock_cluster())
                endpoints = dataclasses.replace(endpoints, kafka_bootstrap=bootstrap)
            dynamodb = client("dynamodb", endpoints.dynamodb)
            sqs = client("sqs", endpoints.sqs)
            provision(
                stack,
                dynamodb=dynamodb,
                sqs=sqs,
                kinesis=client("kinesis", endpoints.sqs) if stack.kinesis_streams else None,
                sns=client("sns", endpoints.sqs) if stack.routes else None,
                events=client("events", endpoints.sqs) if stack.routes else None,
                kafka_bootstrap=endpoints.kafka_bootstrap,
                scale=scale,
            )
            os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = endpoints.dynamodb
            os.environ["AWS_ENDPOINT_URL_SQS"] = endpoints.sqs
            os.environ["AWS_ENDPOINT_URL_KINESIS"] = endpoints.sqs
            os.environ["AWS_ENDPOINT_URL_SNS"] = endpoints.sqs
            os.environ["AWS_ENDPOINT_URL_EVENTBRIDGE"] = endpoints.sqs
            invoker: Invoker
            if invoke_endpoint:
                invoker = EndpointInvoker(invoke_endpoint)
            else:
                on_moto = endpoints.dynamodb_backend == "moto"
                if on_moto:  # moto loses writes under concurrent transactions: one at a time
                    os.environ["INBOX_MAX_PARALLEL_COMMITS"] = "1"
                invoker = InProcessInvoker(stack.functions, serial=on_moto)
            local = LocalStack(
                stack, endpoints, invoker, scale=scale, invoke_endpoint=invoke_endpoint
            )
            try:
                yield local
            finally:
                local.stop()
    finally:
        os.environ.clear()
        os.environ.update(saved)
