"""{{ cookiecutter.consumer_name }}: add each OrderPlaced to its customer's totals, exactly once.

The inbox record of each message and the writes `count_order` decides commit in one DynamoDB
transaction, so a redelivered or replayed order changes nothing. A second message for an order
already counted (a producer retry under another event id) fails the item's condition and is
committed as a business outcome: `already_counted`. A message that is not a valid OrderPlaced
goes to the dead-letter queue with its original body.
"""

import os

from pydantic import BaseModel, Field

from lambda_inbox import ConditionFailures, Decide, InboxConsumer, UnitOfWork

TOTALS_TABLE = os.environ["TOTALS_TABLE"]


class OrderPlaced(BaseModel):
    event_id: str = Field(min_length=1)
    order_id: str = Field(min_length=1)
    customer_id: str = Field(min_length=1)
    amount_cents: int = Field(gt=0)


def count_order(order: OrderPlaced, uow: UnitOfWork) -> None:
    customer = f"CUSTOMER#{order.customer_id}"
    uow.put(
        TOTALS_TABLE,
        {"pk": customer, "sk": f"ORDER#{order.order_id}", "amount_cents": order.amount_cents},
        condition="attribute_not_exists(pk)",
        label="order",
    )
    uow.update(
        TOTALS_TABLE,
        {"pk": customer, "sk": "TOTALS"},
        "ADD orders :one, amount_cents :amount",
        values={":one": 1, ":amount": order.amount_cents},
        label="totals",
    )


def already_counted(order: OrderPlaced, failed: ConditionFailures, uow: UnitOfWork) -> None:
    """The order is counted under another event id: nothing more to write."""
    uow.set_result(outcome="already_counted")


consumer = InboxConsumer(
    "{{ cookiecutter.consumer_name }}",
    model=OrderPlaced,
    decide=Decide(count_order, on_condition_failed=already_counted),
    key="event_id",
)


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return consumer.handle(event, context)
