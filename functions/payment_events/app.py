"""payment-events: record each PaymentCaptured and credit the customer's balance, exactly once.

Triggered by MSK (topic `payments`) and by the SQS `PaymentReplayQueue`, the redrive target of
`PaymentEventsDLQ`. Both paths share the consumer name, so a replayed message that already
committed is a no-op. A second event_id for an existing payment_id is a logical duplicate.

Values are JSON, Avro (`schemas/payment_captured.avsc`) or Protobuf
(`schemas/payment_captured.proto`), with or without the Confluent prefix, or as the event source
mapping's schema registry hands them over (`valueSchemaMetadata`). `PAYMENT_VALUE_FORMAT` names
the format of a value that says nothing about itself (default JSON).
"""

import os
from pathlib import Path

from pydantic import BaseModel, Field

from lambda_inbox import (
    ConditionFailures,
    Decide,
    InboxConfig,
    InboxConsumer,
    SourceSettings,
    UnitOfWork,
    ValueFormats,
    generated_message,
)

DOMAIN_TABLE = os.environ["DOMAIN_TABLE"]


class PaymentCaptured(BaseModel):
    event_id: str = Field(min_length=1)
    payment_id: str = Field(min_length=1)
    order_id: str = Field(min_length=1)
    customer_id: str = Field(min_length=1)
    amount_cents: int = Field(gt=0)


def record_payment(payment: PaymentCaptured, uow: UnitOfWork) -> None:
    customer = f"CUSTOMER#{payment.customer_id}"
    uow.put(
        DOMAIN_TABLE,
        {
            "pk": customer,
            "sk": f"PAYMENT#{payment.payment_id}",
            "amount_cents": payment.amount_cents,
            "order_id": payment.order_id,
            "event_id": payment.event_id,
        },
        condition="attribute_not_exists(pk)",
        label="payment",
    )
    uow.update(
        DOMAIN_TABLE,
        {"pk": customer, "sk": "BALANCE"},
        "ADD balance_cents :amount, payments :one",
        values={":amount": payment.amount_cents, ":one": 1},
        label="balance",
    )
    uow.set_result(outcome="credited")


def skip_logical_duplicate(
    payment: PaymentCaptured, failed: ConditionFailures, uow: UnitOfWork
) -> None:
    """The payment_id is already recorded under another event_id: no effects."""
    uow.set_result(outcome="logical_duplicate")


SCHEMAS = Path(__file__).with_name("schemas")


VALUE_FORMATS = ValueFormats(
    avro_schema=SCHEMAS / "payment_captured.avsc",
    # The generated class (`make protobuf`), loaded on the first Protobuf value.
    protobuf_message=generated_message(SCHEMAS / "payment_captured_pb2.py", "PaymentCaptured"),
    default=os.environ.get("PAYMENT_VALUE_FORMAT", "JSON").upper(),  # type: ignore[arg-type]
)

consumer = InboxConsumer(
    "payment-events",
    model=PaymentCaptured,
    decide=Decide(record_payment, on_condition_failed=skip_logical_duplicate),
    key="event_id",
    config=InboxConfig.from_env(
        "payment-events", sources=SourceSettings(value_formats=VALUE_FORMATS)
    ),
)


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return consumer.handle(event, context)
