"""The outbox leg of a chaos run: order-events' notification requests (`OUTBOX#` items of the
domain table) read from the table's stream on DynamoDB Local by the local stack's stream poller,
relayed by `functions/outbox_relay` with the runtime dying after a send and before the answer
(the batch is relayed again), then read from the notifications queue as the deliveries that
customer-notifications consumes next.

Relayed to a queue (`relay_via="sqs"`, the default), the notifications queue is in memory
(`devkit.memory_aws`: botocore validates and serializes every `SendMessageBatch`, only the
sending is replaced): reading a thousand messages back from the moto server costs half a
minute, and SQS is not what that leg tests. Relayed to a topic (`relay_via="sns"`, as
template.yaml does), the relay publishes to an SNS topic on the moto server whose subscription
(raw message delivery) delivers to a queue there, and the runtime dies after a `PublishBatch`:
outbox -> SNS -> SQS -> inbox."""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from typing import Any

import boto3

from devkit.handlers import function_dir, load_function
from devkit.memory_aws import MemoryAws
from lambda_inbox_tools.local.invoker import Invocation
from lambda_inbox_tools.local.stream_poller import StreamPoller
from lambda_inbox_tools.local.template import FunctionSpec, StreamEventSpec
from lambda_inbox_tools.services.offline import patched_environ
from lambda_inbox_tools.services.queues import create_queue, receive_all

from .containers import LambdaContext
from .workload import NOTIFICATIONS, ChaosConfig, Crash, Delivery, sqs_record

OUTBOX_INSERTS = {
    "eventName": ["INSERT"],
    "dynamodb": {"Keys": {"pk": {"S": [{"prefix": "OUTBOX#"}]}}},
}
IDLE_POLLS = 3


@dataclass
class RelayStats:
    invocations: int = 0
    crashes: int = 0
    sent: int = 0


class _CrashingRelay:
    """Invokes the relay; the runtime dies after a `SendMessageBatch` (or, relaying to a topic,
    a `PublishBatch`) with `relay_crash_rate`."""

    def __init__(self, module: Any, config: ChaosConfig, stats: RelayStats) -> None:
        self.module, self.config, self.stats = module, config, stats
        self.rng = random.Random(config.seed + 77)
        self.client = module.relay.sqs
        if module.sns is not None:  # a relay to the topic: the crash follows a PublishBatch
            module.sns.meta.events.register("after-call.sns.PublishBatch", self._published)
        else:
            module.relay.sqs = self  # the relay sends through `send_message_batch` below

    def _published(self, parsed: dict[str, Any], **_: Any) -> None:
        self.stats.sent += len(parsed.get("Successful", []))
        self._maybe_crash()

    def _maybe_crash(self) -> None:
        if self.rng.random() < self.config.relay_crash_rate:
            self.stats.crashes += 1
            raise Crash("relay after send, before acknowledging")

    def send_message_batch(self, **request: Any) -> Any:
        answer = self.client.send_message_batch(**request)
        self.stats.sent += len(answer.get("Successful", []))
        self._maybe_crash()
        return answer

    def invoke(self, function: FunctionSpec, event: Any) -> Invocation:
        self.stats.invocations += 1
        started = time.monotonic()
        try:
            response = self.module.handler(event, LambdaContext(self.config.lambda_timeout))
        except Crash as crash:
            return Invocation(None, f"crashed: {crash.kind}", time.monotonic() - started)
        return Invocation(response, None, time.monotonic() - started)


def relay_outbox(
    admin: Any, streams: Any, domain_table: str, config: ChaosConfig, endpoint: str = ""
) -> tuple[list[Delivery], RelayStats]:
    """Relay every notification request of `domain_table`; the notifications queue's messages
    as deliveries for customer-notifications. `config.relay_via` "sns": through a topic on the
    moto server at `endpoint`."""
    if config.relay_via == "sns":
        sns: Any = boto3.client("sns", endpoint_url=endpoint, region_name="us-east-1")
        sqs: Any = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
        topic = sns.create_topic(Name=f"{domain_table}-shipment-notifications")["TopicArn"]
        queue_url = create_queue(sqs, f"{domain_table}-notifications")
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
        sns.subscribe(
            TopicArn=topic,
            Protocol="sqs",
            Endpoint=queue_arn["Attributes"]["QueueArn"],
            Attributes={"RawMessageDelivery": "true"},
        )
        variables = {"NOTIFICATION_TOPIC_ARN": topic, "AWS_ENDPOINT_URL_SNS": endpoint}
        with patched_environ({**variables, "NOTIFICATION_QUEUE_URL": queue_url}):
            module = load_function("outbox_relay")

        def drain() -> list[Any]:
            return list(receive_all(sqs, queue_url, delete=True))
    else:
        memory = MemoryAws()
        queue_url = memory.create_queue(f"{domain_table}-notifications")
        with patched_environ({"NOTIFICATION_QUEUE_URL": queue_url}):
            module = load_function("outbox_relay")
        module.relay.sqs = memory.client("sqs")

        def drain() -> list[Any]:
            return memory.drain(queue_url)

    stats = RelayStats()
    function = FunctionSpec(
        logical_id="OutboxRelayFunction",
        name="chaos-outbox-relay",
        code_uri=function_dir("outbox_relay"),
        handler="app.handler",
        timeout=int(config.lambda_timeout),
        memory_size=512,
        environment={},
    )
    spec = StreamEventSpec(
        name="OutboxItems",
        table_name=domain_table,
        batch_size=100,
        batching_window=0,
        report_batch_item_failures=True,
        starting_position="TRIM_HORIZON",
        bisect_on_error=False,
        maximum_retry_attempts=None,
        on_failure_arn=None,
        filters=(OUTBOX_INSERTS,),
    )
    poller = StreamPoller(
        admin, streams, function, spec, _CrashingRelay(module, config, stats), retry_pause=0
    )
    idle = 0
    while idle < IDLE_POLLS:
        idle = 0 if poller.poll_once() else idle + 1
    deliveries = []
    for message in drain():
        body = json.loads(message["Body"])
        record = sqs_record(NOTIFICATIONS, body, message["MessageId"])
        deliveries.append(Delivery(NOTIFICATIONS, body["event_id"], message["MessageId"], record))
    return deliveries, stats
