"""payment-events on a Kinesis batch next to Powertools' batch utility with idempotency, one run.

    .venv/bin/python benchmarks/kinesis_batch.py [--repetitions N] [--records R]

Starts its own DynamoDB Local (`.cache/dynamodb-local`, in memory, free port). Per repetition,
both consumers get the same batch of R PaymentCaptured records from one shard (default 100,
the Kinesis event source mapping's default `BatchSize`), on fresh tables, in alternating order
so machine noise hits both alike, for two workloads:

- hot:      10 customers, so each `BALANCE` item is updated R / 10 times in the batch;
- distinct: every record a different customer.

Each batch is then delivered again as-is (Lambda's retry of the whole batch: every record a
duplicate). Sides:

- lambda-inbox: `functions/payment_events/app.py` (its consumer reads Kinesis events as it reads
  Kafka ones): one inbox record per message in the transaction of its writes;
- powertools: `benchmarks/reference_powertools_kinesis.py`, `BatchProcessor` over Kinesis with
  `@idempotent_function` per record and the same two domain writes as separate calls.

Requests are counted per operation with a botocore `before-call` hook, HTTP sends (SDK retries
included) with `before-send`. Wall time and CPU (`time.process_time`, every thread of this
process; DynamoDB Local runs in another) cover the handler call only: modules, clients and
connections are warmed up first, on another shard. Balances are checked exactly on both sides.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from devkit.handlers import load_function
from devkit.items import balances
from devkit.meters import RequestMeter, Tally
from devkit.payloads import payment
from devkit.tables import create_domain_table, create_inbox_table
from lambda_inbox_tools.services.dynamodb_local import dynamodb_local_or_exit
from lambda_inbox_tools.services.offline import local_client, use_offline_aws
from lambda_inbox_tools.testing.context import FakeLambdaContext
from lambda_inbox_tools.testing.stream_events import kinesis_event, kinesis_record

POWERTOOLS_ENV = {
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_METRICS_NAMESPACE": "Benchmark",
    "POWERTOOLS_SERVICE_NAME": "benchmark",
}
WORKLOADS = {"hot (10 customers)": 10, "distinct (1 customer per record)": 0}
SIDES = ("lambda-inbox", "powertools")


def shard_batch(
    records: int, customers: int, prefix: str, shard: str = "shardId-000000000000"
) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """A Kinesis event of `records` PaymentCaptured and the balances it must produce
    (`customers == 0`: one customer per record)."""
    raw = []
    expected: dict[str, tuple[int, int]] = {}
    for n in range(records):
        customer = f"{prefix}-c{n % customers if customers else n:05d}"
        amount = 1 + n % 97
        body = payment(n, customer, amount, prefix=f"{prefix}-")
        raw.append(kinesis_record(n, body, partition_key=customer, shard_id=shard))
        cents, count = expected.get(customer, (0, 0))
        expected[customer] = (cents + amount, count + 1)
    return kinesis_event(raw), expected


@dataclass
class Run:
    seconds: float
    cpu: float
    tally: Tally


@dataclass
class Side:
    name: str
    handler: Callable[[dict[str, Any], Any], Any]
    meter: RequestMeter
    domain: str


def make_sides(endpoint: str, admin: Any, suffix: str) -> list[Side]:
    """Fresh tables and both consumers loaded against them, warmed up on a shard of their own."""
    inbox, domain, idempotency = (f"{name}-{suffix}" for name in ("inbox", "domain", "idem"))
    pt_domain = f"pt-domain-{suffix}"
    create_inbox_table(admin, inbox)
    for table in (domain, pt_domain):
        create_domain_table(admin, table)
    admin.create_table(
        TableName=idempotency,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
    )
    admin.get_waiter("table_exists").wait(TableName=idempotency)
    os.environ.update(INBOX_TABLE=inbox, DOMAIN_TABLE=domain, AWS_ENDPOINT_URL_DYNAMODB=endpoint)
    os.environ.pop("DEAD_LETTER_QUEUE_URL", None)
    with contextlib.redirect_stdout(io.StringIO()):
        app = load_function("payment_events")
        os.environ.update(IDEMPOTENCY_TABLE=idempotency, DOMAIN_TABLE=pt_domain)
        sys.modules.pop("reference_powertools_kinesis", None)
        ref = importlib.import_module("reference_powertools_kinesis")
        sides = [
            Side("lambda-inbox", app.handler, RequestMeter(app.consumer.dynamodb), domain),
            Side(
                "powertools",
                ref.handler,
                RequestMeter(ref.persistence_layer.client, ref.dynamodb),
                pt_domain,
            ),
        ]
        for side in sides:
            warm, _ = shard_batch(10, 0, f"warm{suffix}", shard="shardId-000000000099")
            response = side.handler(warm, FakeLambdaContext(function_name="benchmark"))
            assert response == {"batchItemFailures": []}, response
    return sides


def deliver(side: Side, event: dict[str, Any]) -> Run:
    side.meter.clear()
    context = FakeLambdaContext(function_name="benchmark")
    with contextlib.redirect_stdout(io.StringIO()):
        cpu, started = time.process_time(), time.perf_counter()
        response = side.handler(event, context)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    if response != {"batchItemFailures": []}:
        sys.exit(f"{side.name}: unexpected failures {response['batchItemFailures'][:3]} ...")
    return Run(seconds, cpu, side.meter.tally())


def repetition(
    endpoint: str, admin: Any, records: int, order: list[str]
) -> dict[tuple[str, str], tuple[Run, Run]]:
    """(workload, side) -> (first delivery, the same batch again). Each workload on fresh
    tables and consumers: a consumer that has just seen a batch of duplicates reads first
    (duplicate_read), which would make the first delivery of the next workload depend on the
    order."""
    results = {}
    for n, workload in enumerate(order):
        suffix = uuid.uuid4().hex[:10]
        sides = make_sides(endpoint, admin, suffix)
        event, expected = shard_batch(records, WORKLOADS[workload], suffix)
        for side in sides if n % 2 == 0 else sides[::-1]:
            results[workload, side.name] = (deliver(side, event), deliver(side, event))
            found = {c: b for c, b in balances(admin, side.domain).items() if c in expected}
            if found != expected:
                sys.exit(f"{side.name}: balances differ from the exact values ({workload})")
    return results


def table(runs: dict[tuple[str, str], list[tuple[Run, Run]]]) -> str:
    lines = [
        "| workload, delivery | side | requests (by operation) | HTTP sends | wall time "
        "| CPU | requests ratio | CPU ratio |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for workload in WORKLOADS:
        for label, index in (("new", 0), ("redelivered", 1)):
            medians = {}
            for side in SIDES:
                chosen = [pair[index] for pair in runs[workload, side]]
                calls = chosen[0].tally.calls
                medians[side] = (
                    sum(calls.values()),
                    statistics.median(r.cpu for r in chosen),
                )
                ops = ", ".join(f"{op} {n}" for op, n in sorted(calls.items()))
                ratio_requests = ratio_cpu = ""
                if side == "powertools":
                    inbox_requests, inbox_cpu = medians["lambda-inbox"]
                    ratio_requests = f"{medians[side][0] / max(inbox_requests, 1):.0f}x"
                    ratio_cpu = f"{medians[side][1] / inbox_cpu:.1f}x"
                lines.append(
                    f"| {workload}, {label} | {side} | {ops} | "
                    f"{statistics.median(r.tally.sends for r in chosen):.0f} | "
                    f"{statistics.median(r.seconds for r in chosen) * 1000:.0f} ms | "
                    f"{medians[side][1] * 1000:.0f} ms | {ratio_requests} | {ratio_cpu} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--records", type=int, default=100)
    args = parser.parse_args()
    use_offline_aws(**POWERTOOLS_ENV)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    runs: dict[tuple[str, str], list[tuple[Run, Run]]] = {}
    with dynamodb_local_or_exit() as endpoint:
        admin = local_client("dynamodb", endpoint)
        for n in range(args.repetitions):
            order = list(WORKLOADS) if n % 2 == 0 else list(WORKLOADS)[::-1]
            for key, pair in repetition(endpoint, admin, args.records, order).items():
                runs.setdefault(key, []).append(pair)
            print(f"# repetition {n + 1} done", file=sys.stderr)
    print(
        f"\npayment-events on one Kinesis batch of {args.records} PaymentCaptured (one shard), "
        f"DynamoDB Local, {args.repetitions} repetitions, both sides in each (medians; "
        "ratios: powertools / lambda-inbox)\n"
    )
    print(table(runs))


if __name__ == "__main__":
    main()
