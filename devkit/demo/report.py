"""The demo's report, computed from the tables and queues, and the invariants.

Counts come from what is stored (inbox records, domain items, dead-letter queues), checked
against what the producers published: every valid event has its effect exactly once, stock and
balances add up, every poison message ends in a dead-letter queue, nothing is left in flight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from lambda_inbox.store import InboxRecord
from lambda_inbox_tools.local.report import Check, Report, invocation_counts, run_facts
from lambda_inbox_tools.services.items import scan_items, scan_plain

from .invariants import (
    DomainState,
    OrderExpectation,
    PaymentExpectation,
    Problems,
    check_notifications,
    check_orders,
    check_payments,
    shipment_notifications,
)
from .workload import INITIAL_STOCK, SKUS, Workload


def build_report(workload: Workload, elapsed: float) -> Report:
    local = workload.local
    published = workload.published
    inbox = [
        InboxRecord.from_item(item)
        for item in scan_items(local.dynamodb, local.stack.table("InboxTable").name)
    ]
    domain = scan_plain(local.dynamodb, local.stack.table("DomainTable").name)
    statuses: Counter[tuple[str, str]] = Counter(
        (record.consumer, record.status.value) for record in inbox
    )
    checks: list[Check] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append(Check(name, ok, detail))

    # the example application's effects, exactly once (invariants.py)
    state = DomainState.read(domain)
    orders = check_orders(
        state, order_expectations(published.orders), dict.fromkeys(SKUS, INITIAL_STOCK)
    )
    check(
        "one shipment or rejection per order, stock adds up",
        orders.ok,
        _detail(
            orders,
            (
                f"{sum('SHIPMENT' in r for r in state.orders.values())} shipments + "
                f"{sum('REJECTION' in r for r in state.orders.values())} rejections for "
                f"{len({o['order_id'] for o in published.orders.values()})} orders; available + "
                "reserved = initial, reserved = shipped"
            ),
        ),
    )
    payments = check_payments(state, payment_expectations(published.payments))
    check(
        "one payment item per payment, balances add up",
        payments.ok,
        _detail(payments, (f"{len(state.payments)} payment items, {len(state.balances)} balances")),
    )
    wanted = {
        event_id: {
            "pk": f"CUSTOMER#{n['customer_id']}",
            "status": "SENT",
            "order_id": n["order_id"],
            "template": n["template"],
        }
        for event_id, n in published.notifications.items()
    }
    requests, relayed = shipment_notifications(state)
    applied = dict.fromkeys(workload.webhook.accepted, 1)
    notifications = check_notifications(state, wanted | relayed, applied)
    shipped = sum("SHIPMENT" in r for r in state.orders.values())
    check(
        "one notification request per shipped order (outbox), each one relayed (through the topic) and sent",
        requests.ok and all(event_id in state.notifications for event_id in relayed),
        _detail(
            requests,
            (
                f"{len(state.outbox)} OUTBOX requests for {shipped} shipped orders; "
                f"{sum(e in state.notifications for e in relayed)} relayed to NOTIFICATION items"
            ),
        ),
    )
    check(
        "one notification and one accepted webhook key per event, after the redrive",
        notifications.ok,
        _detail(
            notifications,
            (
                f"{len(state.notifications)} NOTIFICATION items and {len(applied)} keys accepted "
                f"({sum(workload.webhook.calls.values())} calls) for {len(wanted)} published "
                f"and {len(relayed)} relayed notifications"
            ),
        ),
    )
    shipments = [r["SHIPMENT"] for r in state.orders.values() if "SHIPMENT" in r]
    rejections = [r["REJECTION"] for r in state.orders.values() if "REJECTION" in r]
    payment_items = list(state.payments.values())
    sent = list(state.notifications.values())

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
        **run_facts(local, elapsed),
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
        "crashes": [str(p) for p in workload.crashes.fired] if workload.crashes else [],
        "invocations": invocation_counts(local),
    }
    return Report.of(document, checks, summary_lines(document))


def order_expectations(published: Mapping[str, Mapping[str, Any]]) -> dict[str, OrderExpectation]:
    """The demo's orders (event_id -> payload) as expectations: either outcome may happen, the
    producers race for the stock."""
    lines: dict[str, Counter[str]] = {}
    events: dict[str, set[str]] = {}
    for event_id, order in published.items():
        order_id = str(order["order_id"])
        if order_id not in lines:
            lines[order_id] = Counter()
            for line in order["lines"]:
                lines[order_id][str(line["sku"])] += int(line["qty"])
        events.setdefault(order_id, set()).add(event_id)
    return {
        order_id: OrderExpectation(None, lines[order_id], frozenset(events[order_id]))
        for order_id in lines
    }


def payment_expectations(
    published: Mapping[str, Mapping[str, Any]],
) -> dict[str, PaymentExpectation]:
    payments: dict[str, PaymentExpectation] = {}
    for event_id, payment in published.items():
        payment_id = str(payment["payment_id"])
        known = payments.get(payment_id)
        events = (known.event_ids if known else frozenset()) | {event_id}
        payments[payment_id] = PaymentExpectation(
            str(payment["customer_id"]), int(payment["amount_cents"]), events
        )
    return payments


def _detail(problems: Problems, summary: str) -> str:
    return summary if problems.ok else "; ".join(problems.all()[:5])


def summary_lines(d: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The report's lines on the terminal, from its document."""
    return [
        ("published", ", ".join(f"{k} {v}" for k, v in d["published"].items())),
        (
            "  of which duplicates",
            ", ".join(f"{k} {v}" for k, v in d["published_duplicates"].items())
            + f" (Kafka replay {d['kafka_replayed']})",
        ),
        ("  of which poison", ", ".join(f"{k} {v}" for k, v in d["poison_published"].items())),
        ("distinct events", str(d["distinct_events"])),
        (
            "delivered",
            f"{d['shipments']} shipments, {d['rejections']} rejections, "
            f"{d['payments']} payments, {d['notifications_sent']} notifications",
        ),
        ("duplicates suppressed", str(d["duplicates_suppressed"])),
        ("webhook", f"{d['webhook_calls']} calls for {d['webhook_keys']} Idempotency-Keys"),
        (
            "crashes injected",
            ", ".join(d["crashes"])
            or ("-" if d["invocation"] == "in-process" else "none (in-process runs only)"),
        ),
        ("reaper", f"{d['reaper_runs']} runs, {d['reaped']} stuck lease(s) reaped"),
        ("redriven", ", ".join(f"{k} {v}" for k, v in d["redriven"].items()) or "-"),
        (
            "dead-lettered at the end",
            ", ".join(f"{k} {v}" for k, v in d["dead_lettered_at_end"].items()),
        ),
        ("inbox records", ", ".join(f"{k}: {v}" for k, v in d["inbox_records"].items())),
    ]
