"""What the outbox costs per shipped order: requests and write units of every function on the
way from an OrderPlaced to the customer's webhook, with the outbox and without it.

The example application runs on the local stack (`lambda_inbox_tools.local.stack`: DynamoDB
Local, SQS on a moto server, DomainTable's stream emulated), its functions in-process. Each
function's own clients are metered at botocore's hooks (`devkit.meters.RequestMeter`, and the
WCU by DynamoDB's pricing rules, `devkit.meters.computed_wcu`); the event sources'
polling (ReceiveMessage, GetRecords) is Lambda's and not counted, nor are TTL deletes (free).

- with the outbox: template.yaml as it is: order_events commits the notification request with
  the order, outbox_relay sends it, customer_notifications calls the webhook and records it;
- without: the same orders with `UnitOfWork.outbox` disabled (no request, nothing relayed).

    .venv/bin/python benchmarks/outbox_cost.py --orders 200
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from typing import Any
from unittest import mock

from devkit.demo.webhook import WebhookReceiver, running_webhook
from devkit.meters import RequestMeter, computed_wcu
from devkit.paths import REPO_ROOT
from devkit.payloads import order
from lambda_inbox._commit.unit_of_work import UnitOfWork
from lambda_inbox_tools.local.invoker import boto_clients
from lambda_inbox_tools.local.stack import running_stack
from lambda_inbox_tools.services.offline import use_offline_aws

FUNCTIONS = ("OrderEventsFunction", "OutboxRelayFunction", "CustomerNotificationsFunction")


def run(orders: int, *, outbox: bool) -> dict[str, dict[str, float]]:
    receiver = WebhookReceiver(transient_keys=set())
    wcu: dict[str, float] = dict.fromkeys(FUNCTIONS, 0.0)
    with (
        running_webhook(receiver) as webhook,
        running_stack(
            REPO_ROOT / "template.yaml",
            parameters={"NotifyWebhookUrl": webhook.url},
            say=lambda _: None,
        ) as local,
        contextlib.nullcontext()
        if outbox
        else mock.patch.object(UnitOfWork, "outbox", autospec=True, return_value=""),
    ):
        domain = local.stack.table("DomainTable").name
        local.dynamodb.put_item(
            TableName=domain,
            Item={
                "pk": {"S": "SKU#SKU-RED-MUG"},
                "sk": {"S": "STOCK"},
                "available": {"N": "1000000"},
            },
        )
        meters: dict[str, RequestMeter] = {}
        for name in FUNCTIONS:
            clients = boto_clients(local.invoker.modules[name])  # type: ignore[attr-defined]
            meters[name] = RequestMeter(*clients)

            def count(params: dict[str, Any], model: Any, name: str = name, **_: Any) -> None:
                wcu[name] += computed_wcu(model.name, params)

            for client in clients:
                client.meta.events.register("before-parameter-build.dynamodb", count)
        queue = local.stack.queue("OrderEventsQueue").url
        for n in range(orders):
            body = order(f"evt-{n}", lines=[("SKU-RED-MUG", 1)])
            local.sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(body))
        local.start()
        deadline = time.monotonic() + 600
        expected = orders if outbox else 0
        while len(receiver.accepted) < expected or local.pending():
            if time.monotonic() > deadline:
                raise SystemExit(f"not settled: {len(receiver.accepted)} webhook keys")
            time.sleep(0.5)
        time.sleep(2)  # the pollers' last cycles
        local.stop()
    return {
        name: {
            "requests": len(meters[name].operations()) / orders,
            "dynamodb": sum(meters[name].counts("dynamodb").values()) / orders,
            "sqs": sum(meters[name].counts("sqs").values()) / orders,
            "wcu": wcu[name] / orders,
        }
        for name in FUNCTIONS
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orders", type=int, default=200)
    args = parser.parse_args()
    use_offline_aws(POWERTOOLS_METRICS_NAMESPACE="Bench", POWERTOOLS_SERVICE_NAME="bench")
    without = run(args.orders, outbox=False)
    with_outbox = run(args.orders, outbox=True)
    print(f"\nPer shipped order, {args.orders} orders of one line, batches as the queue gives them")
    print(
        "\n| function | without: requests (DynamoDB + SQS) | without: WCU | with the outbox: "
        "requests (DynamoDB + SQS) | with: WCU |"
    )
    print("|---|---:|---:|---:|---:|")
    totals = [0.0, 0.0, 0.0, 0.0]
    for name in FUNCTIONS:
        a, b = without[name], with_outbox[name]
        print(
            f"| {name} | {a['requests']:.2f} ({a['dynamodb']:.2f} + {a['sqs']:.2f}) | "
            f"{a['wcu']:.2f} | {b['requests']:.2f} ({b['dynamodb']:.2f} + {b['sqs']:.2f}) | "
            f"{b['wcu']:.2f} |"
        )
        for i, value in enumerate((a["requests"], a["wcu"], b["requests"], b["wcu"])):
            totals[i] += value
    print(f"| all | {totals[0]:.2f} | {totals[1]:.2f} | {totals[2]:.2f} | {totals[3]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
