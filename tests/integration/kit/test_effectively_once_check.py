"""The testing kit's effectively-once check: it passes this repository's own consumers (on
this repository's template, through the kit's `local_app`), and it fails the consumers that are
not effectively-once, naming what went wrong: a consumer with no inbox applies duplicates twice,
one that acknowledges before writing loses messages when it crashes."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from devkit.paths import REPO_ROOT
from devkit.payloads import order, payment
from devkit.tables import create_inbox_table
from devkit.zoo import BROKEN, SOURCES, Ledger, seeds_played, sources
from devkit.zoo import run as run_zoo
from devkit.zoo_ledger import create_ledger_table
from devkit.zoo_sns import SNS
from lambda_inbox_tools.services.offline import local_client
from lambda_inbox_tools.testing import (
    NotEffectivelyOnce,
    check_effectively_once,
    kafka_record,
    payload,
    sns_notification,
    sqs_record,
)

TEMPLATE = REPO_ROOT / "template.yaml"
INVOICES = REPO_ROOT / "examples" / "invoices" / "template.yaml"
SHIPMENTS = REPO_ROOT / "examples" / "shipments" / "template.yaml"


def test_payment_events_is_effectively_once_on_kafka(local_app: Any) -> None:
    app = local_app(TEMPLATE)
    records = [
        kafka_record(n % 3, n // 3, payment(n, customer=f"cust-{n % 5}", amount=10 + n))
        for n in range(45)
    ]
    # A producer retry under a new event id (a logical duplicate), at the end of partition 0.
    again = {**payment(4, customer="cust-4", amount=14), "event_id": "evt-4-again"}
    records.append(kafka_record(0, 15, again))

    def credited() -> Counter[str]:
        return Counter(
            item["sk"].removeprefix("PAYMENT#")
            for item in app.items("DomainTable")
            if item["sk"].startswith("PAYMENT#")
        )

    report = check_effectively_once(
        app.function("PaymentEventsFunction"),
        records,
        effects=credited,
        key=lambda record: payload(record)["payment_id"],
        seed=11,
        batch_size=7,
    )

    assert report.replays and report.crashes["before"] and report.crashes["after"], report
    balances = {i["pk"]: i for i in app.items("DomainTable") if i["sk"] == "BALANCE"}
    assert sum(int(b["payments"]) for b in balances.values()) == 45


def test_order_events_is_effectively_once_on_sqs(local_app: Any) -> None:
    app = local_app(TEMPLATE)
    table = app.table_name("DomainTable")
    for sku in ("SKU-RED-MUG", "SKU-BLUE-CAP"):
        app.dynamodb.put_item(
            TableName=table,
            Item={"pk": {"S": f"SKU#{sku}"}, "sk": {"S": "STOCK"}, "available": {"N": "1000"}},
        )
    arn = app.stack.queue("OrderEventsQueue").arn
    records = [
        sqs_record(order(f"evt-{n}", lines=[("SKU-RED-MUG", 1), ("SKU-BLUE-CAP", 2)]), arn=arn)
        for n in range(30)
    ]

    def shipped() -> list[str]:
        return [i["pk"] for i in app.items("DomainTable") if i["sk"] == "SHIPMENT"]

    check_effectively_once(
        app.function("OrderEventsFunction"),
        records,
        effects=shipped,
        key=lambda record: f"ORDER#{payload(record)['order_id']}",
        seed=3,
    )
    stock = {i["pk"]: int(i["available"]) for i in app.items("DomainTable") if i["sk"] == "STOCK"}
    assert stock == {"SKU#SKU-RED-MUG": 970, "SKU#SKU-BLUE-CAP": 940}


def counting_handler(app: Any, *, acknowledge_first: bool = False) -> Any:
    """A consumer with no inbox: one `ADD count :1` per message it is given."""
    table = app.table_name("LedgerTable")
    dynamodb = app.dynamodb

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for record in event["Records"]:
            key = {"pk": {"S": payload(record)["invoice_id"]}, "sk": {"S": "COUNT"}}
            if acknowledge_first:  # "processed" is remembered before the write is made
                dynamodb.put_item(TableName=table, Item={**key, "sk": {"S": "SEEN"}})
            dynamodb.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="ADD applied :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
        return {"batchItemFailures": []}

    return handler


def applied(app: Any) -> Counter[str]:
    return Counter(
        {i["pk"]: int(i["applied"]) for i in app.items("LedgerTable") if i["sk"] == "COUNT"}
    )


def invoices(arn: str, count: int) -> list[dict[str, Any]]:
    return [
        sqs_record({"invoice_id": f"INV-{n}", "amount_cents": 5}, arn=arn) for n in range(count)
    ]


def test_a_consumer_without_an_inbox_fails_the_check(local_app: Any) -> None:
    app = local_app(INVOICES)
    records = invoices(app.stack.queue("InvoicesQueue").arn, 20)

    with pytest.raises(NotEffectivelyOnce, match=r"applied twice: INV-\d+ x\d"):
        check_effectively_once(
            counting_handler(app),
            records,
            effects=lambda: applied(app),
            key=lambda record: payload(record)["invoice_id"],
            clients=[app.dynamodb],
        )


def test_a_check_without_crashes_or_duplicates_passes_the_same_consumer(local_app: Any) -> None:
    """The failure above comes from the duplicates and crashes, not from the check itself (on
    moto: no transaction is involved)."""
    app = local_app(INVOICES, dynamodb="moto")
    records = invoices(app.stack.queue("InvoicesQueue").arn, 20)

    report = check_effectively_once(
        counting_handler(app),
        records,
        effects=lambda: applied(app),
        key=lambda record: payload(record)["invoice_id"],
        duplicate_rate=0,
        crash_rate=0,
    )

    assert report.invocations == 2 and not report.crashes


def test_effects_lost_or_unexpected_are_named(local_app: Any) -> None:
    app = local_app(INVOICES)
    records = invoices(app.stack.queue("InvoicesQueue").arn, 5)

    with pytest.raises(NotEffectivelyOnce, match=r"lost: INV-0.*unexpected: INV-9"):
        check_effectively_once(
            lambda event, context: {"batchItemFailures": []},
            records,
            effects=lambda: ["INV-1", "INV-2", "INV-3", "INV-4", "INV-9"],
            key=lambda record: payload(record)["invoice_id"],
        )


# ---------------------------------------------------------------------------- every seed


def invoice(seed: int, number: int) -> dict[str, Any]:
    return {
        "message_id": f"S{seed}-msg-{number}",
        "invoice_id": f"S{seed}-INV-{number}",
        "customer_id": f"S{seed}-C-{number % 3}",
        "amount_cents": 100 + number,
    }


@pytest.mark.parametrize("source", ["sqs", "fifo"])
def test_the_invoices_example_passes_every_seed(local_app: Any, source: str) -> None:
    """The seeds played (`ZOO_SEEDS`: 0-1 in `make test`, 0-49 in `make soak`) through one warm
    function on DynamoDB Local, each run on invoices of its own (the check requires each key
    once, and nothing else of the run's)."""
    app = local_app(INVOICES)
    function = app.function("RecordInvoiceFunction")
    arn = app.stack.queue("InvoicesQueue").arn
    failed: dict[int, str] = {}
    for seed in seeds_played():
        bodies = [invoice(seed, n) for n in range(10)]
        if source == "fifo":
            records = [sqs_record(b, group=b["customer_id"]) for b in bodies]
        else:
            records = [sqs_record(b, arn=arn) for b in bodies]

        def posted(seed: int = seed) -> Counter[str]:
            return Counter(
                item["sk"].removeprefix("INVOICE#")
                for item in app.items("LedgerTable")
                if item["sk"].startswith(f"INVOICE#S{seed}-")
            )

        finding = checked(function, records, posted, lambda r: payload(r)["invoice_id"], seed)
        if finding:
            failed[seed] = finding
    assert failed == {}


def checked(
    function: Any,
    records: list[dict[str, Any]],
    effects: Any,
    key: Any,
    seed: int,
) -> str | None:
    """What the check finds on one seed, in batches of 5; None when it passes."""
    try:
        check_effectively_once(function, records, effects=effects, key=key, seed=seed, batch_size=5)
    except NotEffectivelyOnce as finding:
        return str(finding)
    return None


def shipped_order(record: dict[str, Any]) -> Any:
    return payload(record, envelope="sns")["order_id"]


def test_the_shipments_example_passes_every_seed(local_app: Any) -> None:
    """A `CreatesItem` consumer (the item is the record, no inbox record) passes the check on
    every seed played, its notifications read through their SNS envelope, each seed on orders
    of its own."""
    app = local_app(SHIPMENTS)
    function = app.function("RecordShipmentFunction")
    arn = app.stack.queue("ShipmentsQueue").arn
    failed: dict[int, str] = {}
    for seed in seeds_played():
        records = [
            sqs_record(
                sns_notification(
                    {"order_id": f"S{seed}-O-{n}", "tracking_number": f"T-{n}"},
                    attributes={"carrier": "ups"},
                ),
                arn=arn,
            )
            for n in range(10)
        ]

        def shipped(seed: int = seed) -> Counter[str]:
            return Counter(
                item["pk"].removeprefix("ORDER#")
                for item in app.items("ShipmentsTable")
                if item["pk"].startswith(f"ORDER#S{seed}-")
            )

        finding = checked(function, records, shipped, shipped_order, seed)
        if finding:
            failed[seed] = finding
    assert failed == {}
    assert app.items("InboxTable") == []


def played_on_dynamodb_local(source: str, every_source: bool) -> list[str]:
    """The broken consumers played on `source`: on each source where it is broken (`make
    soak`), or on one of them, each consumer on the next source in turn, so that every source
    has its share (`make test`; the unit tests play every pair in memory)."""
    return [
        name
        for n, name in enumerate(BROKEN)
        if source in (played := sources(name))
        and (every_source or source == played[n % len(played)])
    ]


@pytest.mark.parametrize(
    "every_source",
    [
        pytest.param(False, id="its-share"),
        pytest.param(True, id="every-source", marks=pytest.mark.soak),
    ],
)
@pytest.mark.parametrize("source", [*SOURCES, SNS])
def test_the_zoo_is_caught_on_dynamodb_local_too(
    dynamodb_local_endpoint: str, source: str, every_source: bool
) -> None:
    """The zoo's detection does not depend on the in-memory ledger it runs on in the unit tests:
    one seed of each broken consumer (where it is broken and the check can see it: `SOUND_ON`,
    `UNSEEN_ON`; the SNS consumers on their queue: `ONLY_ON`), on DynamoDB Local."""
    client = local_client("dynamodb", dynamodb_local_endpoint)
    names = played_on_dynamodb_local(source, every_source)
    assert names, f"no broken consumer is played on {source}"
    for name in names:
        table = f"ledger-{uuid.uuid4().hex[:8]}"
        create_ledger_table(client, table)
        inbox = f"inbox-{uuid.uuid4().hex[:8]}"
        if source == SNS:  # the library's own consumers keep their inbox records there
            create_inbox_table(client, inbox)
        ledger = Ledger(client, table, inbox)
        with pytest.raises(NotEffectivelyOnce):
            run_zoo(BROKEN[name], source, 7, ledger)


def test_every_broken_consumer_is_played_on_dynamodb_local_in_make_test() -> None:
    """The share of `make test` covers the zoo: every broken consumer on one source at least."""
    played = [n for source in [*SOURCES, SNS] for n in played_on_dynamodb_local(source, False)]
    assert sorted(played) == sorted(BROKEN)
