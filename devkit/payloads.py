"""Message bodies of the example application: `OrderPlaced` (order-events) and `PaymentCaptured`
(payment-events), as their producers would send them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The SKUs of the sample events (events/*.json) and of the demo's stock.
SAMPLE_SKUS = ("SKU-RED-MUG", "SKU-BLUE-CAP", "SKU-GREEN-PEN")

OrderLines = Mapping[str, int] | Sequence[tuple[str, int]]


def order(
    event_id: str,
    order_id: str | None = None,
    lines: OrderLines | None = None,
    *,
    customer_id: str = "cust-001",
    total_cents: int | None = None,
) -> dict[str, Any]:
    """An `OrderPlaced` body. `order_id` defaults to the event id with `evt` replaced by `ord`,
    `lines` (SKU -> quantity, or pairs) to one SKU-RED-MUG, `total_cents` to 100 per unit."""
    pairs = list(lines.items()) if isinstance(lines, Mapping) else list(lines or [])
    if lines is None:
        pairs = [("SKU-RED-MUG", 1)]
    return {
        "event_id": event_id,
        "order_id": order_id or event_id.replace("evt", "ord"),
        "customer_id": customer_id,
        "lines": [{"sku": sku, "qty": qty} for sku, qty in pairs],
        "total_cents": 100 * sum(qty for _, qty in pairs) if total_cents is None else total_cents,
    }


def payment(
    n: int,
    customer: str = "cust-001",
    amount: int = 100,
    payment_id: str | None = None,
    *,
    prefix: str = "",
) -> dict[str, Any]:
    """A `PaymentCaptured` body numbered `n`: event `{prefix}evt-{n}`, payment
    `{prefix}pay-{n}` (or `payment_id`), order `{prefix}ord-{n}`."""
    return {
        "event_id": f"{prefix}evt-{n}",
        "payment_id": payment_id or f"{prefix}pay-{n}",
        "order_id": f"{prefix}ord-{n}",
        "customer_id": customer,
        "amount_cents": amount,
    }
