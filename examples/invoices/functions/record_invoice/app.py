"""record-invoice: post each InvoiceIssued to the customer's ledger, exactly once.

Built only on lambda_inbox's public API. The ledger entry and the balance update commit in one
transaction with the inbox record, so a redelivered or replayed invoice is a no-op; a second
message for an invoice already posted (another `message_id`, same `invoice_id`) is a logical
duplicate that changes nothing.
"""

import os

from pydantic import BaseModel, Field

from lambda_inbox import ConditionFailures, Decide, InboxConsumer, UnitOfWork

LEDGER_TABLE = os.environ["LEDGER_TABLE"]


class InvoiceIssued(BaseModel):
    message_id: str = Field(min_length=1)
    invoice_id: str = Field(min_length=1)
    customer_id: str = Field(min_length=1)
    amount_cents: int = Field(gt=0)


def post_invoice(invoice: InvoiceIssued, uow: UnitOfWork) -> None:
    account = f"CUSTOMER#{invoice.customer_id}"
    uow.put(
        LEDGER_TABLE,
        {
            "pk": account,
            "sk": f"INVOICE#{invoice.invoice_id}",
            "amount_cents": invoice.amount_cents,
            "message_id": invoice.message_id,
        },
        condition="attribute_not_exists(pk)",
        label="entry",
    )
    uow.update(
        LEDGER_TABLE,
        {"pk": account, "sk": "BALANCE"},
        "ADD due_cents :amount, invoices :one",
        values={":amount": invoice.amount_cents, ":one": 1},
        label="balance",
    )


def already_posted(invoice: InvoiceIssued, failed: ConditionFailures, uow: UnitOfWork) -> None:
    """The invoice is in the ledger under another message: nothing more to do."""
    uow.set_result(outcome="already_posted")


consumer = InboxConsumer(
    "record-invoice",
    model=InvoiceIssued,
    decide=Decide(post_invoice, on_condition_failed=already_posted),
    key="message_id",
)


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return consumer.handle(event, context)
