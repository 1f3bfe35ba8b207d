"""award-points: one loyalty point per whole currency unit of each PurchaseMade, exactly once.

Triggered by the Kinesis stream of purchases, and by the replay queue that `lambda-inbox replay`
fills with what the stream's event source gave up on: the same consumer name, so a replayed
purchase that committed before is a duplicate. The business key is the purchase's `event_id`:
a producer's retry, put again under a new sequence number, is a duplicate too.
"""

import os

from pydantic import BaseModel, Field

from lambda_inbox import InboxConsumer, UnitOfWork

POINTS_TABLE = os.environ["POINTS_TABLE"]


class PurchaseMade(BaseModel):
    event_id: str = Field(min_length=1)
    customer_id: str = Field(min_length=1)
    amount_cents: int = Field(gt=0)


def award(purchase: PurchaseMade, uow: UnitOfWork) -> None:
    customer = f"CUSTOMER#{purchase.customer_id}"
    points = purchase.amount_cents // 100
    uow.put(
        POINTS_TABLE,
        {"pk": customer, "sk": f"PURCHASE#{purchase.event_id}", "points": points},
        condition="attribute_not_exists(pk)",
    )
    uow.update(
        POINTS_TABLE,
        {"pk": customer, "sk": "POINTS"},
        "ADD points :points, purchases :one",
        values={":points": points, ":one": 1},
    )


consumer = InboxConsumer("award-points", model=PurchaseMade, decide=award, key="event_id")


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return consumer.handle(event, context)  # Kinesis, or SQS for replays
