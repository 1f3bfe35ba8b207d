"""The outbox leg of a chaos run: order-events' notification requests (`OUTBOX#` items of the
domain table) read from the table's stream on DynamoDB Local by the local stack's stream poller,
relayed by `functions/outbox_relay` with the runtime dying after a send and before the answer
(the batch is relayed again), then read from the notifications queue as the deliveries that
customer-notifications consumes next.

The notifications queue is in memory (`devkit.memory_aws`: botocore validates and serializes
every `SendMessageBatch`, only the sending is replaced): reading a thousand messages back from
the moto server costs half a minute, and SQS is not what this leg tests."""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from typing import Any

from devkit.handlers import function_dir, load_function
from devkit.memory_aws import MemoryAws
from lambda_inbox_tools.local.invoker import Invocation
from lambda_inbox_tools.local.stream_poller import StreamPoller
from lambda_inbox_tools.local.template import FunctionSpec, StreamEventSpec
from lambda_inbox_tools.services.offline import patched_environ

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
    """Invokes the relay; the runtime dies after a `SendMessageBatch` with `crash_rate`."""

    def __init__(self, module: Any, config: ChaosConfig, stats: RelayStats) -> None:
        self.module, self.config, self.stats = module, config, stats
        self.rng = random.Random(config.seed + 77)
        self.client = module.relay.sqs
        module.relay.sqs = self  # the relay sends through `send_message_batch` below

    def send_message_batch(self, **request: Any) -> Any:
        answer = self.client.send_message_batch(**request)
        self.stats.sent += len(answer.get("Successful", []))
        if self.rng.random() < self.config.relay_crash_rate:
            self.stats.crashes += 1
            raise Crash("relay after send, before acknowledging")
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
    admin: Any, streams: Any, domain_table: str, config: ChaosConfig
) -> tuple[list[Delivery], RelayStats]:
    """Relay every notification request of `domain_table`; the notifications queue's messages
    as deliveries for customer-notifications."""
    memory = MemoryAws()
    queue_url = memory.create_queue(f"{domain_table}-notifications")
    with patched_environ({"NOTIFICATION_QUEUE_URL": queue_url}):
        module = load_function("outbox_relay")
    module.relay.sqs = memory.client("sqs")
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
    for message in memory.drain(queue_url):
        body = json.loads(message["Body"])
        record = sqs_record(NOTIFICATIONS, body, message["MessageId"])
        deliveries.append(Delivery(NOTIFICATIONS, body["event_id"], message["MessageId"], record))
    return deliveries, stats
