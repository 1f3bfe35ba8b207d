"""payment-events on one 1,000-record MSK batch: a hot-customer batch next to a spread-out one.

    .venv/bin/python benchmarks/kafka_batch.py [--repetitions N] [--records R] [--partitions P]

Starts its own DynamoDB Local (`.cache/dynamodb-local`, in memory, free port) and, per repetition,
runs both scenarios on fresh tables, in alternating order so machine noise hits both alike:

- hot:      10 customers, so each `BALANCE` item is updated 100 times in the batch; those updates
            commute (`ADD`, no condition), so one wave, and each transaction merges a customer's
            updates into one action (~49 payments a transaction);
- distinct: every record a different customer: one wave, group-committed 33 messages (99 actions)
            a transaction.

Each scenario is then redelivered as-is (every record a duplicate). Requests are counted per
operation with a botocore `before-call.dynamodb` hook; HTTP sends (SDK retries included) with
`before-send`. Balances are checked exactly after every run. Wall time is the handler call only
(the function module and its clients are created and warmed up before).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
import uuid
import warnings
from dataclasses import dataclass
from typing import Any

from devkit.events import kafka_event, kafka_record
from devkit.handlers import load_function
from devkit.items import balances
from devkit.meters import RequestMeter, Tally
from devkit.payloads import payment
from devkit.tables import create_domain_table, create_inbox_table
from lambda_inbox_tools.services.dynamodb_local import dynamodb_local_or_exit
from lambda_inbox_tools.services.offline import local_client, use_offline_aws

POWERTOOLS_ENV = {
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_METRICS_NAMESPACE": "Benchmark",
    "POWERTOOLS_SERVICE_NAME": "benchmark",
}
SCENARIOS = {"hot (10 customers)": 10, "distinct (1 customer per record)": 0}


# ---------------------------------------------------------------------------- workload


def batch(
    records: int, partitions: int, customers: int, prefix: str, topic: str = "payments"
) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """An MSK event of `records` PaymentCaptured on `topic` and the balances it must produce.

    `customers == 0` means one customer per record."""
    raw = []
    expected: dict[str, tuple[int, int]] = {}
    for n in range(records):
        customer = f"{prefix}-c{n % customers if customers else n:05d}"
        amount = 1 + n % 97
        body = payment(n, customer, amount, prefix=f"{prefix}-")
        raw.append(
            kafka_record(n % partitions, n // partitions, body, key=customer.encode(), topic=topic)
        )
        cents, count = expected.get(customer, (0, 0))
        expected[customer] = (cents + amount, count + 1)
    return kafka_event(raw), expected


@dataclass
class Run:
    seconds: float
    tally: Tally


def run_scenario(
    endpoint: str, admin: Any, customers: int, records: int, partitions: int
) -> tuple[Run, Run]:
    """One fresh run: (first delivery, redelivery of the same batch)."""
    suffix = uuid.uuid4().hex[:10]
    inbox, domain = f"bench-inbox-{suffix}", f"bench-domain-{suffix}"
    create_inbox_table(admin, inbox)
    create_domain_table(admin, domain)
    os.environ.update(INBOX_TABLE=inbox, DOMAIN_TABLE=domain, AWS_ENDPOINT_URL_DYNAMODB=endpoint)
    os.environ.pop("DEAD_LETTER_QUEUE_URL", None)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            module = load_function("payment_events")
            # Warm up the module, its client and connection pool on a small batch of its own, on
            # another topic: offsets of the measured batch's partitions already seen would mark
            # it as redelivered (a read before the commit).
            warm, _ = batch(20, partitions, 0, f"warm{suffix}", topic="payments-warm-up")
            assert module.handler(warm, None) == {"batchItemFailures": []}
        meter = RequestMeter(module.consumer.dynamodb)
        event, expected = batch(records, partitions, customers, suffix)
        runs = []
        for _ in range(2):
            meter.clear()
            with contextlib.redirect_stdout(io.StringIO()):
                started = time.perf_counter()
                response = module.handler(event, None)
                seconds = time.perf_counter() - started
            if response != {"batchItemFailures": []}:
                sys.exit(f"unexpected failures: {response['batchItemFailures'][:5]} ...")
            runs.append(Run(seconds, meter.tally()))
        found = {c: b for c, b in balances(admin, domain).items() if c.startswith(suffix)}
        if found != expected:
            sys.exit("balances differ from the expected exact values")
        return runs[0], runs[1]
    finally:
        for table in (inbox, domain):
            admin.delete_table(TableName=table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10)
    args = parser.parse_args()
    use_offline_aws(**POWERTOOLS_ENV)
    # Powertools flushes by itself at 100 values of a metric; the batch's own flush may then
    # find nothing left and warns. Metrics go to a null stream here anyway.
    warnings.filterwarnings("ignore", message="No application metrics to publish")

    results: dict[str, list[tuple[Run, Run]]] = {name: [] for name in SCENARIOS}
    with dynamodb_local_or_exit() as endpoint:
        admin = local_client("dynamodb", endpoint)
        names = list(SCENARIOS)
        for repetition in range(args.repetitions):
            order = names if repetition % 2 == 0 else names[::-1]
            for name in order:
                results[name].append(
                    run_scenario(endpoint, admin, SCENARIOS[name], args.records, args.partitions)
                )
                first = results[name][-1][0]
                print(
                    f"# repetition {repetition + 1}: {name}: {first.seconds:.2f} s",
                    file=sys.stderr,
                )

    print(
        f"\npayment-events, one MSK batch of {args.records} PaymentCaptured over "
        f"{args.partitions} partitions, DynamoDB Local, {args.repetitions} repetitions "
        "(median; requests are identical across repetitions unless a range is shown)\n"
    )
    print(
        "| scenario | records | wall time (median) | records/s | TransactWriteItems calls "
        "| BatchGetItem calls | total requests | HTTP sends |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in SCENARIOS:
        for label, index in (("", 0), (", redelivered", 1)):
            runs = [pair[index] for pair in results[name]]
            median = statistics.median(run.seconds for run in runs)

            def spread(values: list[int]) -> str:
                low, high = min(values), max(values)
                return str(low) if low == high else f"{low}-{high}"

            print(
                f"| {name}{label} | {args.records} | {median:.2f} s "
                f"| {args.records / median:,.0f} "
                f"| {spread([r.tally.calls['TransactWriteItems'] for r in runs])} "
                f"| {spread([r.tally.calls['BatchGetItem'] for r in runs])} "
                f"| {spread([sum(r.tally.calls.values()) for r in runs])} "
                f"| {spread([r.tally.sends for r in runs])} |"
            )


if __name__ == "__main__":
    main()
