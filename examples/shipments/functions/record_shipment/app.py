"""record-shipment: mark each dispatched order shipped, exactly once, from an SNS topic's queue.

Built only on lambda_inbox's public API. The queue is subscribed to the topic with raw message
delivery off, so each SQS body is an SNS notification: `envelope="sns"` reads its `Message` as
the payload and its `MessageId` as the delivery id. SNS delivers a notification again under a new
SQS message id when it retries; that redelivery is a duplicate with no key configured. The
carrier comes from the notification's message attributes (`current_envelope()`).
"""

import os

from pydantic import BaseModel, Field

from lambda_inbox import InboxConsumer, UnitOfWork, current_envelope

SHIPMENTS_TABLE = os.environ["SHIPMENTS_TABLE"]


class ShipmentDispatched(BaseModel):
    order_id: str = Field(min_length=1)
    tracking_number: str = Field(min_length=1)


def mark_shipped(shipment: ShipmentDispatched, uow: UnitOfWork) -> None:
    envelope = current_envelope()
    carrier = envelope.attributes.get("carrier", "unknown") if envelope else "unknown"
    uow.update(
        SHIPMENTS_TABLE,
        {"pk": f"ORDER#{shipment.order_id}", "sk": "SHIPMENT"},
        "SET tracking_number = :tracking, carrier = :carrier ADD shipments :one",
        values={":tracking": shipment.tracking_number, ":carrier": carrier, ":one": 1},
    )


consumer = InboxConsumer(
    "record-shipment", model=ShipmentDispatched, decide=mark_shipped, envelope="sns"
)


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return consumer.handle(event, context)
