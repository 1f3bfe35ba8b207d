"""The demo as a workload of `lambda-inbox local` (`lambda_inbox_tools.local.workloads`): it fits
this repository's template only, starts its webhook receiver before the stack, drives the
traffic, the fix and the redrive through it, and reports on the invariants."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from lambda_inbox_tools.local.options import Options
from lambda_inbox_tools.local.report import Report
from lambda_inbox_tools.local.template import Stack
from lambda_inbox_tools.local.workloads import Driving
from lambda_inbox_tools.services.queues import MOTO_SENDER_ID

from .report import build_report
from .webhook import WebhookReceiver, running_webhook
from .workload import Workload

#: What the demo workload drives: this repository's example application.
EXAMPLE_RESOURCES = frozenset(
    {"InboxTable", "DomainTable", "OrderEventsQueue", "PaymentReplayQueue", "NotificationQueue"}
)
#: A sample message for the order queue, in the printed `send` lines.
SAMPLE_ORDER = (
    """{"event_id": "evt-mine-1", "order_id": "ord-mine-1", "customer_id": "cust-001", """
    """"lines": [{"sku": "SKU-RED-MUG", "qty": 1}], "total_cents": 1200}"""
)


def demo_parameters(webhook: str) -> dict[str, str]:
    """The template's parameters for a demo run: its webhook receiver's URL, and the demo's
    operator as the redriver (`RedriverPrincipalId`): on moto every message has one `SenderId`,
    the redriven copies included (docs/aws-fidelity.md)."""
    return {"NotifyWebhookUrl": webhook, "RedriverPrincipalId": MOTO_SENDER_ID}


class DemoSession:
    """One run of the demo: its webhook receiver is up; the stack gets its URL."""

    def __init__(self, receiver: WebhookReceiver) -> None:
        self.receiver = receiver

    @property
    def parameters(self) -> Mapping[str, str]:
        return demo_parameters(self.receiver.url)

    def describe(self) -> str:
        return f"the demo workload; its webhook receiver {self.receiver.url}"

    def drive(self, driving: Driving) -> Report:
        local = driving.local
        workload = Workload(local, messages=driving.options.messages, seed=driving.options.seed)
        self.receiver.transient_keys = set(workload.webhook.transient_keys)
        workload.webhook = self.receiver
        workload.inject_crashes()
        local.start()
        workload.publish()

        def reaped() -> bool:
            return any(
                isinstance(r, dict) and r.get("dead_lettered", 0) > 0
                for s in local.schedulers
                for r in s.stats.responses
            )

        driving.settle(reaped, 0.0)
        workload.fix_and_redrive()
        driving.settle(lambda: True, 30.0)
        return build_report(workload, driving.elapsed())


class DemoWorkload:
    """The `Workload` of `lambda_inbox_tools.local.workloads` for this repository's template."""

    def misfit(self, stack: Stack) -> str | None:
        names = {table.logical_id for table in stack.tables} | {q.logical_id for q in stack.queues}
        missing = ", ".join(sorted(EXAMPLE_RESOURCES - names))
        return (
            f"the demo workload needs this repository's template (missing: {missing})"
            if missing
            else None
        )

    def sample_bodies(self) -> Mapping[str, str]:
        return {"OrderEventsQueue": SAMPLE_ORDER}

    @contextmanager
    def session(self, options: Options) -> Iterator[DemoSession]:
        receiver = WebhookReceiver(set())
        with running_webhook(receiver, options.webhook_host, options.webhook_port):
            yield DemoSession(receiver)


WORKLOAD = DemoWorkload()
