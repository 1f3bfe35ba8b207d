"""The item is the record: what a message whose effect is one new item costs, four ways, in one
run on one DynamoDB Local.

    .venv/bin/python benchmarks/creates_item_cost.py [--batches N] [--warmup W]
        [--latency-ms 0,3,8]

The same work on every side: 10-message SQS batches of `ShipmentRegistered` (each a shipment
item of ~0.4 KB with the library's attributes, keyed by its shipment id; the message key is the
body's `shipment_id`, so a resend under a new messageId is the same message everywhere):

- creates:       `InboxConsumer(decide=CreatesItem(table, item))`, one conditional `PutItem`
                 per message, sent concurrently;
- creates-tx:    `CreatesItem(table, item, transaction=True)`, the puts in one transaction;
- transactional: `uow.put(table, item, condition="attribute_not_exists(pk)")` with the inbox
                 record, group-committed;
- powertools:    Powertools `BatchProcessor` + `@idempotent_function` (`DynamoDBPersistenceLayer`)
                 around a conditional `put_item` of the item.

Each side has its own tables, so "no other table written" is read off the tables. Phases, the
sides interleaved batch by batch with the order rotated: warm-up; new batches; the same batches
redelivered (same messageIds, ApproximateReceiveCount 2); resent (new messageIds); then, with
`--latency-ms`, fresh new batches under a fixed delay before every HTTP request of every side
(`devkit.network`). Per side: DynamoDB requests, write requests and WCU per message (computed by
DynamoDB's pricing rules and, where DynamoDB Local reports it, measured: it reports none for a
failed conditional put), and the batch's median wall time (p90) per delay. The end state is
checked item by item (every item once, unchanged by redeliveries and resends).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from pydantic import BaseModel

from devkit.events import sqs_event, sqs_record
from devkit.meters import RequestMeter
from devkit.network import ModelledLatency
from devkit.tables import create_domain_table, create_inbox_table
from lambda_inbox import Clients, CreatesItem, InboxConfig, InboxConsumer, UnitOfWork
from lambda_inbox_tools.services.dynamodb_local import dynamodb_local_or_exit
from lambda_inbox_tools.services.offline import local_client, use_offline_aws
from lambda_inbox_tools.testing.context import FakeLambdaContext

#: The capacity meters and the environment of the Powertools side, shared with the first
#: benchmark of the kind (benchmarks/ is on the path of a script run from it).
shared = importlib.import_module("sqs_vs_powertools")
POWERTOOLS_ENV, Capacity, CapacityMeter, median = (
    shared.POWERTOOLS_ENV,
    shared.Capacity,
    shared.CapacityMeter,
    shared.median,
)
BATCH_SIZE = 10
PHASES = ("new", "redelivered", "resent")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


class ShipmentRegistered(BaseModel):
    shipment_id: str
    order_id: str
    carrier: str
    address: str


def shipment_item(shipment: ShipmentRegistered) -> dict[str, Any]:
    return {
        "pk": f"SHIPMENT#{shipment.shipment_id}",
        "sk": "SHIPMENT",
        "order_id": shipment.order_id,
        "carrier": shipment.carrier,
        "address": shipment.address,
    }


def bodies(prefix: str, batches: int) -> list[list[str]]:
    return [
        [
            json.dumps(
                {
                    "shipment_id": f"{prefix}-{b}-{n}",
                    "order_id": f"O-{prefix}-{b}-{n}",
                    "carrier": "ups",
                    "address": "1 Example Street, Springfield " + "x" * 120,
                }
            )
            for n in range(BATCH_SIZE)
        ]
        for b in range(batches)
    ]


@dataclass
class Side:
    name: str
    handler: Handler
    clients: list[Any]
    domain: str
    other_table: str
    batches: list[list[str]]
    costs: dict[str, list[tuple[int, int, float, float | None]]] = field(default_factory=dict)
    times: dict[float, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.meter = RequestMeter(*self.clients)
        self.capacity = CapacityMeter(self.clients)

    def run(self, index: int, phase: str, record: str | None) -> float:
        receive_count = 2 if phase == "redelivered" else 1
        ids = "resent" if phase == "resent" else "m"
        event = sqs_event(
            *(
                sqs_record(
                    body, message_id=f"{ids}-{self.name}-{index}-{n}", receive_count=receive_count
                )
                for n, body in enumerate(self.batches[index])
            )
        )
        self.meter.clear()
        self.capacity.capacity = Capacity()
        with contextlib.redirect_stdout(io.StringIO()):
            started = time.perf_counter()
            response = self.handler(event, FakeLambdaContext(function_name="benchmark"))
            elapsed = time.perf_counter() - started
        assert response.get("batchItemFailures") == [], (self.name, response)
        if record is not None:
            tally, capacity = self.meter.tally(), self.capacity.capacity
            measured = capacity.measured_wcu if capacity.measured_any else None
            self.costs.setdefault(record, []).append(
                (tally.requests, tally.writes, capacity.computed_wcu, measured)
            )
        return elapsed


def inbox_side(
    name: str, ddb_endpoint: str, suffix: str, decide: Any, batches: list[list[str]]
) -> Side:
    client = local_client("dynamodb", ddb_endpoint)
    inbox, domain = f"inbox-{name}-{suffix}", f"domain-{name}-{suffix}"
    create_inbox_table(client, inbox)
    create_domain_table(client, domain)
    config = InboxConfig(consumer=name, inbox_table=inbox, dead_letter_queue_url=None)
    consumer = InboxConsumer(
        name,
        model=ShipmentRegistered,
        decide=decide(domain),
        key="shipment_id",
        clients=Clients(dynamodb=client),
        config=config,
    )
    return Side(name, consumer.handle, [client], domain, inbox, batches)


def transactional(domain: str) -> Callable[[ShipmentRegistered, UnitOfWork], None]:
    def register(shipment: ShipmentRegistered, uow: UnitOfWork) -> None:
        uow.put(domain, shipment_item(shipment), condition="attribute_not_exists(pk)")

    return register


def powertools_side(ddb_endpoint: str, suffix: str, batches: list[list[str]]) -> Side:
    client = local_client("dynamodb", ddb_endpoint)
    idempotency, domain = f"idempotency-{suffix}", f"domain-powertools-{suffix}"
    create_domain_table(client, domain)
    client.create_table(
        TableName=idempotency,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
    )
    persistence = DynamoDBPersistenceLayer(table_name=idempotency, boto3_client=client)
    config = IdempotencyConfig(event_key_jmespath="shipment_id")
    processor = BatchProcessor(event_type=EventType.SQS)

    @idempotent_function(  # type: ignore[untyped-decorator]
        data_keyword_argument="shipment", config=config, persistence_store=persistence
    )
    def register(shipment: dict[str, Any]) -> dict[str, Any]:
        item = shipment_item(ShipmentRegistered.model_validate(shipment))
        client.put_item(
            TableName=domain,
            Item={name: {"S": value} for name, value in item.items()},
            ConditionExpression="attribute_not_exists(pk)",
        )
        return {"registered": shipment["shipment_id"]}

    def record_handler(record: Any) -> None:
        register(shipment=json.loads(record["body"]))

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        config.register_lambda_context(context)
        response = process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
        return dict(response)

    return Side("powertools", handler, [client], domain, idempotency, batches)


def interleave(sides: list[Side], batches: range, phase: str, record: str | None) -> None:
    for n, index in enumerate(batches):
        for side in sides[n % len(sides) :] + sides[: n % len(sides)]:
            side.run(index, phase, record)


def per_message(samples: list[tuple[int, int, float, float | None]], column: int) -> str:
    values = [s[column] for s in samples]
    if any(v is None for v in values):
        return "n/a"
    return f"{median([float(v) for v in values if v is not None]) / BATCH_SIZE:.2f}"


def scan_items(ddb: Any, table: str) -> dict[str, Any]:
    items: dict[str, Any] = {}
    for page in ddb.get_paginator("scan").paginate(TableName=table):
        for item in page["Items"]:
            items[json.dumps(item.get("pk") or item["id"])] = item
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=20, help="measured batches per phase")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured batches per side")
    parser.add_argument("--latency-ms", default="0,3,8", help="delays per request, e.g. 0,3,8")
    args = parser.parse_args()
    latencies = [float(ms) for ms in args.latency_ms.split(",") if ms.strip()]
    total = args.warmup + args.batches * (1 + len(latencies))
    use_offline_aws(**POWERTOOLS_ENV)
    os.environ.pop("DEAD_LETTER_QUEUE_URL", None)

    with dynamodb_local_or_exit() as endpoint:
        suffix = uuid.uuid4().hex[:8]
        sides = [
            inbox_side(
                "creates", endpoint, suffix, lambda t: CreatesItem(t, shipment_item),
                bodies("c", total),
            ),
            inbox_side(
                "creates-tx", endpoint, suffix,
                lambda t: CreatesItem(t, shipment_item, transaction=True), bodies("x", total),
            ),
            inbox_side("transactional", endpoint, suffix, transactional, bodies("t", total)),
            powertools_side(endpoint, suffix, bodies("p", total)),
        ]  # fmt: skip
        ddb = local_client("dynamodb", endpoint)
        interleave(sides, range(args.warmup), "new", None)
        measured = range(args.warmup, args.warmup + args.batches)
        interleave(sides, measured, "new", "new")
        before = {side.name: scan_items(ddb, side.domain) for side in sides}
        others = {side.name: len(scan_items(ddb, side.other_table)) for side in sides}
        interleave(sides, measured, "redelivered", "redelivered")
        interleave(sides, measured, "resent", "resent")
        for side in sides:  # redeliveries and resends changed no item
            assert scan_items(ddb, side.domain) == before[side.name], side.name
        network = ModelledLatency(*(client for side in sides for client in side.clients))
        for n, milliseconds in enumerate(latencies):
            network.set(milliseconds / 1000)
            first = args.warmup + args.batches * (1 + n)
            for index, batch in enumerate(range(first, first + args.batches)):
                for side in sides[index % len(sides) :] + sides[: index % len(sides)]:
                    side.times.setdefault(milliseconds, []).append(side.run(batch, "new", None))
        network.set(0)
        for side in sides:
            assert len(scan_items(ddb, side.domain)) == total * BATCH_SIZE, side.name
        print(report(sides, args.batches, latencies, others))


def report(sides: list[Side], batches: int, latencies: list[float], others: dict[str, int]) -> str:
    rows = [
        f"{batches} batches of {BATCH_SIZE} per side and phase; per message: DynamoDB requests, "
        "write requests, WCU computed (measured by DynamoDB Local, where it reports any).",
        "",
        "| side | phase | requests | writes | WCU computed | WCU measured |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for side in sides:
        for phase in PHASES:
            samples = side.costs[phase]
            rows.append(
                f"| {side.name} | {phase} | {per_message(samples, 0)} "
                f"| {per_message(samples, 1)} | {per_message(samples, 2)} "
                f"| {per_message(samples, 3)} |"
            )
    rows += ["", "Items in each side's other table (inbox / idempotency) after the new batches: "
             + ", ".join(f"{name} {count}" for name, count in others.items()), ""]  # fmt: skip
    rows += [
        "| delay per request | " + " | ".join(f"{s.name} ms (p90)" for s in sides) + " |",
        "|---:|" + "---:|" * len(sides),
    ]
    for milliseconds in latencies:
        cells = []
        for side in sides:
            times = side.times[milliseconds]
            p90 = statistics.quantiles(times, n=10)[-1] if len(times) >= 10 else max(times)
            cells.append(f"{median(times) * 1000:.1f} ({p90 * 1000:.1f})")
        rows.append(f"| {milliseconds:g} ms | " + " | ".join(cells) + " |")
    by_name = {side.name: side for side in sides}
    for milliseconds in latencies:
        creates = median(by_name["creates"].times[milliseconds])
        transactional_ms = median(by_name["transactional"].times[milliseconds])
        rows.append(
            f"\nCreatesItem / transactional at {milliseconds:g} ms: "
            f"{creates / transactional_ms:.2f}" + (" (target <= 1.5)" if milliseconds == 3 else "")
        )
    return "\n".join(rows)


if __name__ == "__main__":
    main()
