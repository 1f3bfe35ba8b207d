"""The outbox end to end on DynamoDB Local, through the local stack's emulation of every event
source of template.yaml: orders (with duplicates and a logical duplicate) ship through
order_events, whose transactions write one notification request each; DomainTable's stream
drives outbox_relay, which is killed after sending its first batch and before acknowledging
it; the batch is sent again, and customer_notifications' inbox absorbs the duplicates. The
result: exactly one NOTIFICATION item and one accepted webhook key per shipped order."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from devkit.demo.crashes import Crashes, CrashPlan
from devkit.demo.invariants import (
    DomainState,
    check_notifications,
    shipment_notifications,
)
from devkit.demo.webhook import WebhookReceiver, running_webhook
from devkit.paths import REPO_ROOT
from devkit.payloads import order
from lambda_inbox_tools.local.stack import running_stack
from lambda_inbox_tools.services.items import scan_plain

TEMPLATE = REPO_ROOT / "template.yaml"
ORDERS = 24


def test_a_relay_killed_between_sending_and_acknowledging_causes_no_second_effect(
    dynamodb_local_endpoint: str, moto_server_endpoint: str
) -> None:
    receiver = WebhookReceiver(transient_keys=set())
    sent_by_relay: Counter[str] = Counter()
    with (
        running_webhook(receiver) as webhook,
        running_stack(
            TEMPLATE,
            dynamodb_endpoint=dynamodb_local_endpoint,
            sqs_endpoint=moto_server_endpoint,
            parameters={"NotifyWebhookUrl": webhook.url},
            stack_name=f"outbox-{time.monotonic_ns() % 10**8}",
            say=lambda _: None,
        ) as local,
    ):
        domain = local.stack.table("DomainTable").name
        for sku in ("SKU-RED-MUG", "SKU-BLUE-CAP"):
            local.dynamodb.put_item(
                TableName=domain,
                Item={"pk": {"S": f"SKU#{sku}"}, "sk": {"S": "STOCK"}, "available": {"N": "500"}},
            )
        (relay_stream,) = local.stream_pollers
        relay_module = local.invoker.modules["OutboxRelayFunction"]  # type: ignore[attr-defined]

        def count(params: dict[str, Any], **_: Any) -> None:
            for entry in params["PublishBatchRequestEntries"]:
                sent_by_relay[entry["MessageAttributes"]["outbox-message-id"]["StringValue"]] += 1

        # The relay publishes to ShipmentNotificationsTopic, which delivers to NotificationQueue.
        relay_module.sns.meta.events.register("before-parameter-build.sns.PublishBatch", count)
        crashes = Crashes([CrashPlan("OutboxRelayFunction", 1, "after", "sns.PublishBatch")])
        crashes.install(local.invoker)  # type: ignore[arg-type]
        queue = local.stack.queue("OrderEventsQueue").url
        bodies = [order(f"evt-{n}", lines=[("SKU-RED-MUG", 1)]) for n in range(ORDERS)]
        bodies += bodies[:4]  # redelivered by the producer
        bodies.append({**bodies[0], "event_id": "evt-0-again"})  # a logical duplicate
        for body in bodies:
            local.sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(body))
        local.start()

        deadline = time.monotonic() + 120
        while True:
            state = DomainState.read(scan_plain(local.dynamodb, domain))
            if len(state.notifications) >= ORDERS and local.pending() == 0:
                break
            assert time.monotonic() < deadline, (
                f"{len(state.notifications)} notifications, {local.pending()} pending, "
                f"{relay_stream.stats}"
            )
            time.sleep(0.3)
        local.stop()

    assert [str(plan) for plan in crashes.fired] == [
        "OutboxRelayFunction after sns.PublishBatch #1"
    ]
    requests, relayed = shipment_notifications(state)
    assert requests.ok, requests.all()
    assert len(relayed) == ORDERS and len(state.outbox) == ORDERS
    # The crashed batch was sent again: duplicates reached the notifications queue ...
    assert sum(sent_by_relay.values()) > ORDERS and set(sent_by_relay) == set(relayed)
    # ... and the receiving inbox made each one effect, one webhook key, once.
    applied = dict.fromkeys(receiver.accepted, 1)
    problems = check_notifications(state, relayed, applied)
    assert problems.ok, problems.all()
    assert set(receiver.accepted) == set(relayed)
    print(
        f"relay sent {sum(sent_by_relay.values())} messages for {ORDERS} shipped orders; "
        f"{len(state.notifications)} NOTIFICATION items, {len(receiver.accepted)} webhook keys "
        f"accepted ({sum(receiver.calls.values())} calls)"
    )
