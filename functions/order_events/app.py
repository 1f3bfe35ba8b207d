"""order-events: reserve stock and create the shipment for each OrderPlaced, exactly once.

All effects commit atomically with the inbox record, and so does the request to notify the
customer of a shipped order: an outbox item (`OUTBOX#...` in DomainTable), relayed from the
table's stream to the notifications queue by outbox_relay. Not enough stock (or an unknown SKU)
commits a REJECTION instead; an order that already has a shipment or a rejection is a logical
duplicate and changes nothing.
"""

import hashlib
import os

from pydantic import BaseModel, ConfigDict, Field

from lambda_inbox import ConditionFailures, Decide, InboxConsumer, UnitOfWork

DOMAIN_TABLE = os.environ["DOMAIN_TABLE"]
ORDER_RECORDS = ("shipment", "rejection")
#: The outbox destination of shipment notifications; outbox_relay knows its queue.
NOTIFICATIONS = "notifications"


def notification_id(order_id: str) -> str:
    """The id of an order's shipment notification: the same for every decision about the order,
    so the receiving inbox sees one message however often it is relayed."""
    digest = hashlib.sha256(f"order_shipped:{order_id}".encode()).hexdigest()
    return f"shipped-{digest[:32]}"


class OrderLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sku: str = Field(min_length=1)
    qty: int = Field(gt=0)


class OrderPlaced(BaseModel):
    event_id: str = Field(min_length=1)
    order_id: str = Field(min_length=1)
    customer_id: str = Field(min_length=1)
    lines: list[OrderLine] = Field(min_length=1)
    total_cents: int = Field(ge=0)

    def quantities(self) -> dict[str, int]:
        """Quantity per SKU; a SKU listed twice is reserved once for the sum."""
        totals: dict[str, int] = {}
        for line in self.lines:
            totals[line.sku] = totals.get(line.sku, 0) + line.qty
        return totals


def _order_key(order: OrderPlaced, record: str) -> dict[str, str]:
    return {"pk": f"ORDER#{order.order_id}", "sk": record.upper()}


def reserve_stock(order: OrderPlaced, uow: UnitOfWork) -> None:
    for sku, qty in order.quantities().items():
        uow.update(
            DOMAIN_TABLE,
            {"pk": f"SKU#{sku}", "sk": "STOCK"},
            "SET available = available - :qty ADD reserved :qty",
            condition="available >= :qty",
            values={":qty": qty},
            label=f"stock:{sku}",
        )
    uow.put(
        DOMAIN_TABLE,
        {
            **_order_key(order, "shipment"),
            "status": "PENDING",
            "customer_id": order.customer_id,
            "lines": [{"sku": line.sku, "qty": line.qty} for line in order.lines],
            "event_id": order.event_id,
        },
        condition="attribute_not_exists(pk)",
        label="shipment",
    )
    uow.condition_check(
        DOMAIN_TABLE, _order_key(order, "rejection"), "attribute_not_exists(pk)", label="rejection"
    )
    event_id = notification_id(order.order_id)
    uow.outbox(
        DOMAIN_TABLE,
        destination=NOTIFICATIONS,
        message_id=event_id,
        body={
            "event_id": event_id,
            "customer_id": order.customer_id,
            "order_id": order.order_id,
            "template": "order_shipped",
        },
    )
    uow.set_result(outcome="reserved")


def reject_or_skip(order: OrderPlaced, failed: ConditionFailures, uow: UnitOfWork) -> None:
    """Shipment or rejection already there: logical duplicate. Otherwise: out of stock."""
    if any(label in failed for label in ORDER_RECORDS):
        uow.set_result(outcome="logical_duplicate")
        return
    uow.put(
        DOMAIN_TABLE,
        {
            **_order_key(order, "rejection"),
            "reason": "insufficient_stock",
            "event_id": order.event_id,
            "customer_id": order.customer_id,
        },
        condition="attribute_not_exists(pk)",
        label="rejection",
    )
    uow.condition_check(
        DOMAIN_TABLE, _order_key(order, "shipment"), "attribute_not_exists(pk)", label="shipment"
    )
    uow.set_result(
        outcome="rejected",
        reason="insufficient_stock",
        skus=sorted(label.removeprefix("stock:") for label in failed.labels),
    )


consumer = InboxConsumer(
    "order-events",
    model=OrderPlaced,
    decide=Decide(reserve_stock, on_condition_failed=reject_or_skip),
    key="event_id",
)


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return consumer.handle(event, context)
