"""The report of a local run, computed from the tables and queues, and the invariants.

Counts come from what is stored (inbox records, domain items, dead-letter queues), checked
against what the producers published: every valid event has its effect exactly once, stock and
balances add up, every poison message ends in a dead-letter queue, nothing is left in flight.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from .workload import INITIAL_STOCK, SKUS, Workload

_deserialize = TypeDeserializer().deserialize


def scan(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items.extend({k: _deserialize(v) for k, v in item.items()} for item in page["Items"])
    return items


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Report:
    document: dict[str, Any]
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)


def build_report(workload: Workload, elapsed: float) -> Report:
    local = workload.local
    published = workload.published
    inbox = scan(local.dynamodb, local.stack.table("InboxTable").name)
    domain = scan(local.dynamodb, local.stack.table("DomainTable").name)
    statuses: Counter[tuple[str, str]] = Counter(
        (str(item.get("consumer", "")), str(item.get("status", ""))) for item in inbox
    )
    checks: list[Check] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append(Check(name, ok, detail))

    # orders
    shipments = [i for i in domain if i["sk"] == "SHIPMENT"]
    rejections = [i for i in domain if i["sk"] == "REJECTION"]
    orders = {o["order_id"] for o in published.orders.values()}
    decided = [i["pk"][6:] for i in shipments + rejections]
    check(
        "one shipment or rejection per order",
        sorted(decided) == sorted(orders),
        f"{len(shipments)} shipments + {len(rejections)} rejections for {len(orders)} orders",
    )
    stock_ok = True
    for sku in SKUS:
        item = next(i for i in domain if i["pk"] == f"SKU#{sku}")
        shipped = sum(
            int(line["qty"]) for s in shipments for line in s["lines"] if line["sku"] == sku
        )
        available, reserved = int(item["available"]), int(item["reserved"])
        stock_ok = stock_ok and available + reserved == INITIAL_STOCK and reserved == shipped
    check("stock adds up", stock_ok, "available + reserved = initial, reserved = shipped")

    # payments
    payment_items = [i for i in domain if str(i["sk"]).startswith("PAYMENT#")]
    expected = {p["payment_id"] for p in published.payments.values()}
    check(
        "one payment item per payment",
        sorted(i["sk"][8:] for i in payment_items) == sorted(expected),
        f"{len(payment_items)} items for {len(expected)} payments",
    )
    balances_ok = True
    for balance in (i for i in domain if i["sk"] == "BALANCE"):
        mine = [int(i["amount_cents"]) for i in payment_items if i["pk"] == balance["pk"]]
        balances_ok = balances_ok and (
            int(balance["balance_cents"]) == sum(mine) and int(balance["payments"]) == len(mine)
        )
    check("balances add up", balances_ok, "balance = sum of payments, count = payments")

    # notifications
    sent = [i for i in domain if str(i["sk"]).startswith("NOTIFICATION#")]
    notified = {i["sk"][13:] for i in sent}
    wanted = set(published.notifications)
    accepted = set(workload.webhook.accepted)
    check(
        "one notification per event, after the redrive",
        notified == wanted,
        f"{len(notified)} NOTIFICATION items for {len(wanted)} notifications",
    )
    check(
        "webhook accepted every notification, each under its own key",
        accepted == wanted,
        f"{len(accepted)} keys accepted, {sum(workload.webhook.calls.values())} calls",
    )

    # dead letters and what is left
    dead = {dlq.name: local.queue_depth(dlq.url) for dlq, _ in local.stack.redrive_pairs()}
    poison = sum(published.poison.values())
    failed = sum(n for (c, s), n in statuses.items() if s == "FAILED")
    check(
        "every poison message is FAILED in the inbox and dead-lettered",
        failed == poison and sum(dead.values()) >= poison,
        f"{failed} FAILED records and {sum(dead.values())} dead letters for {poison} poison "
        "messages (a redelivered poison message is dead-lettered again: at least once)",
    )
    pending = local.pending()
    check("nothing left in flight", pending == 0, f"{pending} messages or records pending")
    open_leases = sum(n for (c, s), n in statuses.items() if s == "IN_PROGRESS")
    check("no lease left open", open_leases == 0, f"{open_leases} IN_PROGRESS records")

    valid = len(published.orders) + len(published.payments) + len(published.notifications)
    completed = sum(n for (c, s), n in statuses.items() if s == "COMPLETED")
    reaper = [r for s in local.schedulers for r in s.stats.responses if isinstance(r, dict)]
    document: dict[str, Any] = {
        "seconds": round(elapsed, 1),
        "invocation": "in-process" if local.in_process else "endpoint",
        "invoke_endpoint": local.invoke_endpoint,
        "dynamodb": local.endpoints.dynamodb_backend,
        "dynamodb_endpoint": local.endpoints.dynamodb,
        "published": dict(published.messages),
        "published_duplicates": dict(published.duplicates),
        "kafka_replayed": published.kafka_replayed,
        "poison_published": dict(published.poison),
        "distinct_events": valid,
        "completed_records": completed,
        "duplicates_suppressed": sum(published.messages.values())
        - poison
        - valid
        + 1,  # the stuck notification was never published
        "shipments": len(shipments),
        "rejections": len(rejections),
        "payments": len(payment_items),
        "notifications_sent": len(sent),
        "webhook_calls": sum(workload.webhook.calls.values()),
        "webhook_keys": len(workload.webhook.calls),
        "inbox_records": {f"{c} {s}": n for (c, s), n in sorted(statuses.items())},
        "dead_lettered_at_end": dead,
        "redriven": workload.redriven,
        "reaper_runs": len(reaper),
        "reaped": sum(int(r.get("reaped", 0)) for r in reaper),
        "crashes": [f"{p.function} {p.when} commit #{p.nth}" for p in workload.crashes.fired]
        if workload.crashes
        else [],
        "invocations": {
            runner.label: {
                "invocations": runner.stats.invocations,
                "failed": runner.stats.failed_invocations,
            }
            for runner in local.runners()
        },
        "invariants": {c.name: {"ok": c.ok, "detail": c.detail} for c in checks},
    }
    document["ok"] = all(c.ok for c in checks)
    return Report(document, checks)
