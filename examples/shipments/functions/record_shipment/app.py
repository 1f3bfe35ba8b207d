"""record-shipment: register each dispatched order's shipment, exactly once, from an SNS topic's
queue.

Built only on lambda_inbox's public API. A shipment registered is one new item keyed by its
order, so the item is the record (`CreatesItem`): one conditional put per notification is both
the shipment and its dedupe, 1 WCU, and no inbox record is written. The queue is subscribed to
the topic with raw message delivery off, so each SQS body is an SNS notification:
`envelope="sns"` reads its `Message` as the payload and its `MessageId` as the delivery id. SNS
delivers a notification again under a new SQS message id when it retries, and a producer may
publish the same dispatch twice: both find the shipment and are duplicates; another tracking
number for a shipped order is dead-lettered (`fingerprint_mismatch`). The carrier comes from the
notification's message attributes (`current_envelope()`).
"""

import os
from typing import Any

from pydantic import BaseModel, Field

from lambda_inbox import CreatesItem, InboxConsumer, current_envelope

SHIPMENTS_TABLE = os.environ["SHIPMENTS_TABLE"]


class ShipmentDispatched(BaseModel):
    order_id: str = Field(min_length=1)
    tracking_number: str = Field(min_length=1)


def shipment(dispatched: ShipmentDispatched) -> dict[str, Any]:
    envelope = current_envelope()
    carrier = envelope.attributes.get("carrier", "unknown") if envelope else "unknown"
    return {
        "pk": f"ORDER#{dispatched.order_id}",
        "sk": "SHIPMENT",
        "tracking_number": dispatched.tracking_number,
        "carrier": carrier,
    }


consumer = InboxConsumer(
    "record-shipment",
    model=ShipmentDispatched,
    decide=CreatesItem(SHIPMENTS_TABLE, shipment),
    envelope="sns",
)


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return consumer.handle(event, context)
