"""record-invoice's own tests, written only with lambda-inbox's public API and its testing kit
(`pip install "lambda-inbox[testing]"`; the fixtures come from its pytest plugin). The app's
tables and queue are the template's own, on DynamoDB Local and a moto server."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from lambda_inbox_tools.testing import (
    LocalApp,
    check_effectively_once,
    delivered_again,
    payload,
    sqs_event,
    sqs_record,
)

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"


def invoice(number: int, *, customer: str = "C-1", amount: int = 1250) -> dict[str, Any]:
    return {
        "message_id": f"msg-{number}",
        "invoice_id": f"INV-{number}",
        "customer_id": customer,
        "amount_cents": amount,
    }


def ledger(app: LocalApp) -> tuple[Counter[str], dict[str, dict[str, int]]]:
    """Invoices posted (invoice id -> entries) and each customer's balance."""
    posted: Counter[str] = Counter()
    balances: dict[str, dict[str, int]] = {}
    for item in app.items("LedgerTable"):
        customer = item["pk"].removeprefix("CUSTOMER#")
        if item["sk"] == "BALANCE":
            balances[customer] = {"due": item["due_cents"], "invoices": item["invoices"]}
        else:
            posted[item["sk"].removeprefix("INVOICE#")] += 1
    return posted, balances


def test_an_invoice_redelivered_is_posted_once(local_app: Any) -> None:
    app = local_app(TEMPLATE)
    record_invoice = app.function("RecordInvoiceFunction")
    record = sqs_record(invoice(1), arn=app.stack.queue("InvoicesQueue").arn)

    assert record_invoice(sqs_event(record)) == {"batchItemFailures": []}
    assert record_invoice(sqs_event(delivered_again(record))) == {"batchItemFailures": []}

    assert ledger(app) == (Counter({"INV-1": 1}), {"C-1": {"due": 1250, "invoices": 1}})


def test_an_invalid_invoice_goes_to_the_dead_letter_queue_with_its_body(local_app: Any) -> None:
    app = local_app(TEMPLATE)
    record_invoice = app.function("RecordInvoiceFunction")
    bad = json.dumps(invoice(2, amount=-5))

    response = record_invoice(sqs_event(sqs_record(bad, arn=app.stack.queue("InvoicesQueue").arn)))

    assert response == {"batchItemFailures": []}  # acknowledged: it is in the DLQ, not retried
    (dead,) = app.messages("InvoicesDLQ")
    assert dead["Body"] == bad
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "invalid_payload"
    assert ledger(app) == (Counter(), {})


def test_effectively_once_through_duplicates_redeliveries_reordering_and_crashes(
    local_app: Any,
) -> None:
    app = local_app(TEMPLATE)
    arn = app.stack.queue("InvoicesQueue").arn
    bodies = [invoice(n, customer=f"C-{n % 4}", amount=100 + n) for n in range(40)]
    records = [sqs_record(body, arn=arn) for body in bodies]
    # A producer retry: the same invoice under a new message id, and an invalid invoice.
    records.append(sqs_record({**bodies[0], "message_id": "msg-0-again"}, arn=arn))
    poison = sqs_record(invoice(99, amount=0), arn=arn)
    records.append(poison)

    report = check_effectively_once(
        app.function("RecordInvoiceFunction"),
        records,
        effects=lambda: ledger(app)[0],
        key=lambda record: (
            payload(record)["invoice_id"] if payload(record)["amount_cents"] > 0 else None
        ),
        seed=2026,
    )

    assert report.crashes["before"] and report.crashes["after"], report
    assert report.duplicates, report
    balances = ledger(app)[1]
    for customer, balance in balances.items():
        mine = [b for b in bodies if b["customer_id"] == customer]
        assert balance == {"due": sum(b["amount_cents"] for b in mine), "invoices": len(mine)}
    # Dead-lettering is at least once: a crash after the send delivers the poison again.
    assert {m["Body"] for m in app.messages("InvoicesDLQ")} == {poison["body"]}
