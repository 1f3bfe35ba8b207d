"""{{ cookiecutter.consumer_name }}'s tests, with lambda-inbox's testing kit (its pytest plugin gives
`local_app`): the template's tables and queues on DynamoDB Local (the real engine: transactions,
conditions) and a moto server, the function loaded from `src/` as Lambda loads it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from lambda_inbox_tools.testing import (
    LocalApp,
    check_effectively_once,
    delivered_again,
    kafka_event,
    kafka_record,
    payload,
    sqs_event,
    sqs_record,
)

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"
SOURCE = "{{ cookiecutter.event_source }}"
TOPIC = "orders"


def order(number: int, *, customer: str = "C-1", amount: int = 1250) -> dict[str, Any]:
    return {
        "event_id": f"evt-{number}",
        "order_id": f"O-{number}",
        "customer_id": customer,
        "amount_cents": amount,
    }


def records(app: LocalApp, bodies: list[Any]) -> list[dict[str, Any]]:
    """The bodies as the event source delivers them (Kafka: two partitions)."""
    if SOURCE == "sqs":
        arn = app.stack.queue("OrdersQueue").arn
        return [sqs_record(body, arn=arn) for body in bodies]
    offsets = Counter[int]()
    built = []
    for n, body in enumerate(bodies):
        partition = n % 2
        value = body.encode() if isinstance(body, str) else body
        built.append(kafka_record(partition, offsets[partition], value, topic=TOPIC))
        offsets[partition] += 1
    return built


def event(batch: list[dict[str, Any]]) -> dict[str, Any]:
    return sqs_event(*batch) if SOURCE == "sqs" else kafka_event(batch)


def again(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same records delivered once more (SQS: the receive count goes up)."""
    return [delivered_again(record) for record in batch] if SOURCE == "sqs" else batch


def totals(app: LocalApp) -> tuple[Counter[str], dict[str, dict[str, int]]]:
    """Orders counted (order id -> items) and each customer's totals."""
    counted: Counter[str] = Counter()
    customers: dict[str, dict[str, int]] = {}
    for item in app.items("TotalsTable"):
        customer = item["pk"].removeprefix("CUSTOMER#")
        if item["sk"] == "TOTALS":
            customers[customer] = {"orders": item["orders"], "amount": item["amount_cents"]}
        else:
            counted[item["sk"].removeprefix("ORDER#")] += 1
    return counted, customers


def test_an_order_delivered_twice_is_counted_once(local_app: Any) -> None:
    app = local_app(TEMPLATE)
    consumer = app.function("ConsumerFunction")
    batch = records(app, [order(1)])

    assert consumer(event(batch)) == {"batchItemFailures": []}
    assert consumer(event(again(batch))) == {"batchItemFailures": []}

    assert totals(app) == (Counter({"O-1": 1}), {"C-1": {"orders": 1, "amount": 1250}})


def test_a_producer_retry_under_a_new_event_id_is_counted_once(local_app: Any) -> None:
    app = local_app(TEMPLATE)
    consumer = app.function("ConsumerFunction")
    batch = records(app, [order(1), {**order(1), "event_id": "evt-1-retry"}])

    assert consumer(event(batch)) == {"batchItemFailures": []}

    assert totals(app) == (Counter({"O-1": 1}), {"C-1": {"orders": 1, "amount": 1250}})


def test_an_invalid_order_goes_to_the_dead_letter_queue_with_its_body(local_app: Any) -> None:
    app = local_app(TEMPLATE)
    consumer = app.function("ConsumerFunction")
    bad = json.dumps(order(2, amount=-5))

    response = consumer(event(records(app, [bad])))

    assert response == {"batchItemFailures": []}  # acknowledged: it is in the DLQ, not retried
    (dead,) = app.messages("DeadLetterQueue")
    assert dead["Body"] == bad
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "invalid_payload"
    assert totals(app) == (Counter(), {})


def test_effectively_once_through_duplicates_redeliveries_and_crashes(local_app: Any) -> None:
    app = local_app(TEMPLATE)
    bodies = [order(n, customer=f"C-{n % 3}", amount=100 + n) for n in range(30)]
    played = records(app, bodies)

    report = check_effectively_once(
        app.function("ConsumerFunction"),
        played,
        effects=lambda: totals(app)[0],
        key=lambda record: payload(record)["order_id"],
        seed=7,
    )

    assert report.crashes["before"] and report.crashes["after"], report
    for customer, total in totals(app)[1].items():
        mine = [body for body in bodies if body["customer_id"] == customer]
        assert total == {"orders": len(mine), "amount": sum(b["amount_cents"] for b in mine)}
