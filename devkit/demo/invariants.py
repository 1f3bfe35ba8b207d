"""The example application's invariants, checked from its domain table (docs/architecture.md,
"The example application"): every domain effect exactly once per distinct `event_id`.

One module for the three places that check them: the local stack's report (`make demo`), `make
sam-local` and the chaos run. Each describes what it sent as expectations (plain values, so any
workload can build them) and gets back the problems, each one either something **lost** (an
effect missing) or something **applied twice** (or applied without a valid event), so a caller can
count both apart.

- Orders: one `SHIPMENT` or `REJECTION` per order (the expected one, when the caller knows it),
  recorded for one of the order's events; per SKU `available + reserved` is the initial stock and
  `reserved` is what the shipments hold.
- Payments: one `PAYMENT#` item per payment, for one of its events, with its amount; every
  customer's `BALANCE` is the sum and count of its payments.
- Notifications: one `NOTIFICATION#` item per notification, `SENT`, with the expected fields;
  the webhook applied each key once and no other key.
- Shipped orders, end to end through the outbox: one `OUTBOX#` notification request per shipped
  order and none for any other; each request becomes a notification of its own
  (`shipment_notifications`), which the notification check then holds to the rules above.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lambda_inbox.store._outbox_item import OutboxMessage


@dataclass(frozen=True)
class OrderExpectation:
    #: "SHIPMENT" or "REJECTION"; None when either may happen (concurrent orders on scarce stock).
    kind: str | None
    #: Quantity per SKU of the order's lines.
    lines: Mapping[str, int]
    #: The valid events that carried the order (any of them may be the one recorded).
    event_ids: frozenset[str]


@dataclass(frozen=True)
class PaymentExpectation:
    customer_id: str
    amount_cents: int
    event_ids: frozenset[str]


@dataclass
class Problems:
    """What is wrong, as lost effects and effects applied twice (or without a valid event)."""

    lost: list[str] = field(default_factory=list)
    double: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.lost and not self.double

    def all(self) -> list[str]:
        return [*(f"lost: {p}" for p in self.lost), *(f"twice: {p}" for p in self.double)]


@dataclass
class DomainState:
    """The example application's domain items by kind (items as plain Python values)."""

    orders: dict[str, dict[str, Mapping[str, Any]]] = field(default_factory=dict)
    stock: dict[str, tuple[int, int]] = field(default_factory=dict)
    payments: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    balances: dict[str, tuple[int, int]] = field(default_factory=dict)
    notifications: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Outbox items (notification requests) by message id.
    outbox: dict[str, OutboxMessage] = field(default_factory=dict)

    @classmethod
    def read(cls, items: Iterable[Mapping[str, Any]]) -> DomainState:
        state = cls()
        for item in items:
            pk, sk = str(item["pk"]), str(item["sk"])
            message = OutboxMessage.from_item(item) if pk.startswith("OUTBOX#") else None
            if message is not None:
                state.outbox[message.message_id] = message
            elif pk.startswith("ORDER#"):
                state.orders.setdefault(pk.removeprefix("ORDER#"), {})[sk] = item
            elif pk.startswith("SKU#") and sk == "STOCK":
                reserved = int(item.get("reserved", 0))
                state.stock[pk.removeprefix("SKU#")] = (int(item["available"]), reserved)
            elif sk.startswith("PAYMENT#"):
                state.payments[sk.removeprefix("PAYMENT#")] = item
            elif sk == "BALANCE":
                cents, count = int(item["balance_cents"]), int(item["payments"])
                state.balances[pk.removeprefix("CUSTOMER#")] = (cents, count)
            elif sk.startswith("NOTIFICATION#"):
                state.notifications[sk.removeprefix("NOTIFICATION#")] = item
        return state

    def shipped(self) -> Counter[str]:
        """Quantity per SKU that the recorded shipments hold."""
        totals: Counter[str] = Counter()
        for records in self.orders.values():
            for line in records.get("SHIPMENT", {}).get("lines", []):
                totals[str(line["sku"])] += int(line["qty"])
        return totals


def check_orders(
    state: DomainState,
    orders: Mapping[str, OrderExpectation],
    initial_stock: Mapping[str, int],
) -> Problems:
    problems = Problems()
    expected_reserved: Counter[str] = Counter()
    for order_id, expected in orders.items():
        found = state.orders.get(order_id, {})
        if len(found) > 1:
            problems.double.append(f"order {order_id} has {sorted(found)}")
        kinds = [expected.kind] if expected.kind else ["SHIPMENT", "REJECTION"]
        recorded = [kind for kind in kinds if kind in found]
        if not recorded:
            problems.lost.append(f"order {order_id}: no {' or '.join(kinds)} (has {sorted(found)})")
        elif str(found[recorded[0]].get("event_id")) not in expected.event_ids:
            problems.double.append(f"order {order_id} recorded for a foreign event")
        if expected.kind == "SHIPMENT" or (expected.kind is None and "SHIPMENT" in found):
            expected_reserved.update(expected.lines)
    for order_id in sorted(set(state.orders) - set(orders)):
        problems.double.append(f"order {order_id} recorded but never (validly) sent")
    for sku, initial in sorted(initial_stock.items()):
        available, reserved = state.stock.get(sku, (initial, 0))
        detail = f"{sku}: available {available}, reserved {reserved}; expected reserved "
        detail += f"{expected_reserved[sku]} of {initial}"
        if reserved > expected_reserved[sku] or available + reserved != initial:
            problems.double.append(detail)
        elif reserved < expected_reserved[sku]:
            problems.lost.append(detail)
    return problems


def check_payments(state: DomainState, payments: Mapping[str, PaymentExpectation]) -> Problems:
    problems = Problems()
    expected: dict[str, tuple[int, int]] = {}
    from_items: dict[str, tuple[int, int]] = {}
    for payment_id, payment in payments.items():
        cents, count = expected.get(payment.customer_id, (0, 0))
        expected[payment.customer_id] = (cents + payment.amount_cents, count + 1)
        stored = state.payments.get(payment_id)
        if stored is None:
            problems.lost.append(f"payment {payment_id} of {payment.customer_id} not recorded")
            continue
        amount = int(stored["amount_cents"])
        if str(stored.get("event_id")) not in payment.event_ids or amount != payment.amount_cents:
            problems.double.append(f"payment {payment_id} recorded for a foreign event")
        cents, count = from_items.get(payment.customer_id, (0, 0))
        from_items[payment.customer_id] = (cents + amount, count + 1)
    for payment_id in sorted(set(state.payments) - set(payments)):
        problems.double.append(f"payment {payment_id} recorded but never (validly) sent")
    for customer in sorted(set(expected) | set(state.balances)):
        have = state.balances.get(customer, (0, 0))
        want = expected.get(customer, (0, 0))
        items = from_items.get(customer, (0, 0))
        detail = f"balance of {customer}: {have}, its payments {items}, expected {want}"
        if any(h > w for h, w in zip(have, want, strict=True)) or any(
            h > i for h, i in zip(have, items, strict=True)
        ):
            problems.double.append(detail)
        elif have != want:
            problems.lost.append(detail)
    return problems


def check_notifications(
    state: DomainState,
    notifications: Mapping[str, Mapping[str, Any]],
    webhook_applied: Mapping[str, int],
) -> Problems:
    """`notifications`: event_id -> the fields its `NOTIFICATION#` item must hold;
    `webhook_applied`: Idempotency-Key -> times the receiver applied it (2xx answers)."""
    problems = Problems()
    for event_id, fields in notifications.items():
        stored = state.notifications.get(event_id)
        if stored is None:
            problems.lost.append(f"notification {event_id} not recorded")
        elif any(stored.get(name) != value for name, value in fields.items()):
            problems.double.append(f"notification {event_id}: {dict(stored)}, expected {fields}")
        if webhook_applied.get(event_id, 0) == 0:
            problems.lost.append(f"webhook never applied {event_id}")
    for event_id in sorted(set(state.notifications) - set(notifications)):
        problems.double.append(f"notification {event_id} recorded but never (validly) sent")
    for key, applied in sorted(webhook_applied.items()):
        if applied > 1:
            problems.double.append(f"webhook applied {key} {applied} times")
        if applied and key not in notifications:
            problems.double.append(f"webhook applied {key}, not a valid notification")
    return problems


def shipment_notifications(state: DomainState) -> tuple[Problems, dict[str, dict[str, Any]]]:
    """The outbox half of the end-to-end invariant: per shipped order exactly one notification
    request (an `OUTBOX#` item whose body names the order), none for an order not shipped.
    Returns the problems and the notifications the requests must become (event_id -> fields
    of its `NOTIFICATION#` item), for `check_notifications`."""
    problems = Problems()
    requested: dict[str, list[str]] = {}
    wanted: dict[str, dict[str, Any]] = {}
    for message_id, message in sorted(state.outbox.items()):
        body = json.loads(message.body)
        order_id = str(body.get("order_id"))
        requested.setdefault(order_id, []).append(message_id)
        wanted[str(body.get("event_id", message_id))] = {
            "pk": f"CUSTOMER#{body.get('customer_id')}",
            "status": "SENT",
            "order_id": order_id,
            "template": body.get("template"),
        }
    shipped = {order_id for order_id, r in state.orders.items() if "SHIPMENT" in r}
    for order_id in sorted(shipped):
        count = len(requested.get(order_id, []))
        if count == 0:
            problems.lost.append(f"order {order_id} shipped without a notification request")
        elif count > 1:
            problems.double.append(f"order {order_id} has {count} notification requests")
    for order_id in sorted(set(requested) - shipped):
        problems.double.append(f"notification requested for order {order_id}, not shipped")
    return problems, wanted
