"""The verdict of a chaos run, from the tables, the DLQs and the webhook: lost and
double-applied effects (the example app's invariants, `devkit.demo.invariants`),
poison dead-lettered."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from devkit.demo.invariants import (
    DomainState,
    OrderExpectation,
    PaymentExpectation,
    check_notifications,
    check_orders,
    check_payments,
    shipment_notifications,
)
from lambda_inbox.store import InboxRecord
from lambda_inbox_tools.services.items import scan_items, scan_plain

from .webhook import WebhookReceiver
from .workload import CONSUMER_NAMES, NOTIFICATIONS, ORDERS, PAYMENTS, Event, Workload

#: The outbox leg's row of lost / double-applied: notification requests per shipped order.
OUTBOX = "outbox"


def scan(client: Any, table: str) -> list[dict[str, Any]]:
    """Every item of `table` as plain Python values."""
    return scan_plain(client, table)


def drain(sqs: Any, queue_url: str) -> list[str]:
    """The `inbox-message-key` of every message in a DLQ (deleted once received)."""
    keys: list[str] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
            VisibilityTimeout=300, WaitTimeSeconds=0,
        ).get("Messages", [])  # fmt: skip
        if not batch:
            return keys
        keys.extend(m["MessageAttributes"]["inbox-message-key"]["StringValue"] for m in batch)
        sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(batch)
            ],
        )


@dataclass
class Verdict:
    lost: Counter[str] = field(default_factory=Counter)
    double_applied: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    dead_lettered: Counter[str] = field(default_factory=Counter)  # distinct keys
    dlq_messages: Counter[str] = field(default_factory=Counter)
    poison_sent: Counter[str] = field(default_factory=Counter)
    poison_not_marked_failed: Counter[str] = field(default_factory=Counter)
    webhook_calls: int = 0
    webhook_keys_called_again: int = 0
    notification_requests: int = 0
    shipped_orders: int = 0

    def note(self, counter: Counter[str], workload: str, problem: str) -> None:
        counter[workload] += 1
        if len(self.problems) < 20:
            self.problems.append(f"{workload}: {problem}")


def verify(
    workload: Workload,
    admin: Any,
    inbox_table: str,
    domain_table: str,
    sqs: Any,
    dlq_urls: Mapping[str, str],
    webhook: WebhookReceiver,
) -> Verdict:
    verdict = Verdict()
    lost, double = verdict.lost, verdict.double_applied
    inbox = {
        (record.consumer, record.message_key): record
        for record in map(InboxRecord.from_item, scan_items(admin, inbox_table))
    }
    domain = scan(admin, domain_table)

    def status(event: Event) -> str | None:
        item = inbox.get((CONSUMER_NAMES[event.workload], event.event_id))
        return None if item is None else item.status.value

    # the example application's effects, exactly once (one module for every checker)
    state = DomainState.read(domain)
    orders = {
        order_id: OrderExpectation(kind, lines, frozenset(event_ids))
        for order_id, (kind, lines, event_ids) in workload.orders.items()
    }
    payments = {
        payment_id: PaymentExpectation(customer, amount, frozenset(event_ids))
        for payment_id, (customer, amount, event_ids) in workload.payments.items()
    }
    notifications = {
        event_id: {"pk": f"CUSTOMER#{customer}", "status": "SENT"}
        for event_id, customer in workload.notifications.items()
    }
    requests, relayed = shipment_notifications(state)
    notifications |= {e: {"pk": f["pk"], "status": "SENT"} for e, f in relayed.items()}
    verdict.notification_requests = len(state.outbox)
    verdict.shipped_orders = sum("SHIPMENT" in r for r in state.orders.values())
    for name, problems in (
        (ORDERS, check_orders(state, orders, workload.stock)),
        (PAYMENTS, check_payments(state, payments)),
        (OUTBOX, requests),
        (NOTIFICATIONS, check_notifications(state, notifications, webhook.applied)),
    ):
        for problem in problems.lost:
            verdict.note(lost, name, problem)
        for problem in problems.double:
            verdict.note(double, name, problem)
    verdict.webhook_calls = sum(webhook.calls.values())
    verdict.webhook_keys_called_again = sum(1 for n in webhook.calls.values() if n > 1)
    # every valid event completed in the inbox, its effect present
    for event in workload.events.values():
        if event.poison:
            verdict.poison_sent[event.workload] += 1
            if status(event) != "FAILED":  # best effort once the DLQ has it: reported only
                verdict.poison_not_marked_failed[event.workload] += 1
            continue
        if status(event) != "COMPLETED":
            verdict.note(lost, event.workload, f"{event.event_id}: inbox {status(event)}")
    # dead-letter queues
    for name, url in dlq_urls.items():
        keys = drain(sqs, url)
        verdict.dlq_messages[name] = len(keys)
        verdict.dead_lettered[name] = len(set(keys))
        if set(keys) != workload.poison[name]:
            verdict.problems.append(
                f"{name}: DLQ keys differ from the poison sent "
                f"({len(set(keys) - workload.poison[name])} extra, {len(workload.poison[name] - set(keys))} missing)"
            )
    return verdict
