"""lambda-inbox vs a Powertools-idempotency baseline on the same DynamoDB Local, in one run.

    .venv/bin/python benchmarks/sqs_vs_powertools.py [--batches N] [--lines L] [--warmup W]
        [--latency-ms 0,3,8] [--profile]

Starts its own DynamoDB Local (`.cache/dynamodb-local`, in memory, free port), creates the
tables, and feeds both consumers the same kind of work: 10-message SQS batches of new
OrderPlaced events (every order its own SKUs and order_id; stock seeded before timing):

- inbox:    `functions/order_events/app.py` (group-committed TransactWriteItems, after a
            BatchGetItem of the inbox keys when something suggests a duplicate);
- baseline: `benchmarks/reference_powertools_consumer.py` (Powertools `BatchProcessor` +
            `@idempotent_function` with `DynamoDBPersistenceLayer`; per line a conditional
            UpdateItem of the stock, then a conditional PutItem of the shipment).

Batches run interleaved (inbox, baseline, baseline, inbox, ... the order flips every pair) so
machine noise hits both sides alike. Then every batch is redelivered with new messageIds (same
event_id), interleaved the same way. Requests are counted per operation with a botocore
`before-call.dynamodb` hook on every client each side uses; HTTP sends (SDK retries included)
with `before-send`. `ReturnConsumedCapacity=TOTAL` is added to every request; the WCU DynamoDB
Local reports, when it reports them, are shown as "measured", and next to them the WCU computed
from DynamoDB's pricing rules ("computed"). Both end states are checked item by item.

CPU per batch is the process's own CPU time (every thread; DynamoDB Local is another process),
`time.process_time()` around each handler call, over as many more new batches per side with the
meters off (they decode and size every request: the benchmark's cost, not the consumer's).
Interleaved with them runs the floor: for batches of orders of its own, the inbox's requests
(its transaction, and its batch read where the library sends one for a new batch) captured with
DynamoDB answered in process, then sent alone through the inbox's client (`devkit.captured`):
what no library code can save. `--latency-ms` also measures both sides again
under a modelled network: a fixed delay in front of every HTTP request of every client of both
sides (a botocore `before-send` hook, `devkit.network`), one set of fresh batches per delay.
`--profile` prints a cProfile over every thread of as many more inbox batches, run after the
measurement (`devkit.profiling`; the consumer's call workers are started anew inside it). Both
run with the meters off, like the CPU phase: they need times, not counts.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import statistics
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from devkit.captured import Captured, capture_requests, replay
from devkit.events import sqs_event, sqs_record
from devkit.handlers import load_function
from devkit.items import get_item, stock_of
from devkit.meters import WRITE_OPERATIONS, RequestMeter, Tally, computed_wcu
from devkit.network import ModelledLatency
from devkit.payloads import order
from devkit.profiling import AllThreadsProfile
from devkit.tables import create_domain_table, create_inbox_table, seed_stock
from lambda_inbox_tools.services.dynamodb_local import dynamodb_local_or_exit
from lambda_inbox_tools.services.offline import local_client, use_offline_aws
from lambda_inbox_tools.testing.context import FakeLambdaContext

BATCH_SIZE = 10
INITIAL_STOCK = 1_000
POWERTOOLS_ENV = {
    # Both sides log only warnings; their EMF metrics go to a null stream during the run.
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_METRICS_NAMESPACE": "Benchmark",
    "POWERTOOLS_SERVICE_NAME": "benchmark",
    "AWS_LAMBDA_FUNCTION_NAME": "benchmark",
}


# ---------------------------------------------------------------------------- write capacity


@dataclass
class Capacity:
    """The WCU one side's writes cost while a batch ran: computed by DynamoDB's pricing rules,
    and measured (the ConsumedCapacity DynamoDB Local returns, when it returns any)."""

    computed_wcu: float = 0.0
    measured_wcu: float = 0.0
    measured_any: bool = False


class CapacityMeter:
    """botocore hooks on each client a side uses: ask every request for its consumed capacity
    (`ReturnConsumedCapacity=TOTAL`) and add up the WCU; `capacity` is swapped per batch."""

    def __init__(self, clients: list[Any]) -> None:
        self.capacity = Capacity()
        self._lock = threading.Lock()
        for each in clients:
            self.attach(each)

    def attach(self, client: Any) -> None:
        client.meta.events.register("before-parameter-build.dynamodb", self._ask_capacity)
        client.meta.events.register("after-call.dynamodb", self._capacity)

    def detach(self, client: Any) -> None:
        client.meta.events.unregister("before-parameter-build.dynamodb", self._ask_capacity)
        client.meta.events.unregister("after-call.dynamodb", self._capacity)

    def _ask_capacity(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        # API parameters (before serialization): the place to compute WCU and ask for them.
        with self._lock:
            self.capacity.computed_wcu += computed_wcu(model.name, params)
        if "ReturnConsumedCapacity" in model.input_shape.members:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")

    def _capacity(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        consumed = parsed.get("ConsumedCapacity")
        if consumed is None or model.name not in WRITE_OPERATIONS:
            return
        entries = consumed if isinstance(consumed, list) else [consumed]
        with self._lock:
            for entry in entries:
                self.capacity.measured_any = True
                units = entry.get("WriteCapacityUnits", entry.get("CapacityUnits"))
                self.capacity.measured_wcu += float(units or 0.0)


# ---------------------------------------------------------------------------- workload


def make_orders(prefix: str, batches: int, lines: int) -> list[list[dict[str, Any]]]:
    """`batches` lists of 10 OrderPlaced bodies; every order has its own SKUs and order_id."""
    out = []
    for b in range(batches):
        batch = []
        for m in range(BATCH_SIZE):
            n = f"{prefix}-{b:05d}-{m:02d}"
            skus = {f"SKU-{n}-{i}": 1 + i for i in range(lines)}
            batch.append(
                order(
                    f"evt-{n}", f"ord-{n}", skus, customer_id=f"cust-{m}", total_cents=1299 * lines
                )
            )
        out.append(batch)
    return out


def stock_for(batches: list[list[dict[str, Any]]]) -> dict[str, int]:
    """INITIAL_STOCK for every SKU the orders name."""
    return {
        line["sku"]: INITIAL_STOCK
        for batch in batches
        for placed in batch
        for line in placed["lines"]
    }


def verify(ddb: Any, table: str, batches: list[list[dict[str, Any]]]) -> int:
    """Every SKU reserved exactly once, every order has exactly one shipment."""
    checked = 0
    for batch in batches:
        for placed in batch:
            for line in placed["lines"]:
                stock = stock_of(ddb, table, line["sku"])
                expected = (INITIAL_STOCK - line["qty"], line["qty"])
                assert stock == expected, (table, line, stock)
                checked += 1
            shipment = get_item(ddb, table, {"pk": f"ORDER#{placed['order_id']}", "sk": "SHIPMENT"})
            assert shipment is not None and shipment["event_id"]["S"] == placed["event_id"], placed
            checked += 1
    return checked


# ---------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class Cost:
    """What one batch of one side cost: requests, HTTP sends, time in DynamoDB calls, WCU."""

    tally: Tally
    capacity: Capacity


@dataclass
class Side:
    name: str
    handler: Callable[[dict[str, Any], Any], dict[str, Any]]
    clients: list[Any]
    domain_table: str
    orders: list[list[dict[str, Any]]]
    new: list[tuple[Cost, float]] = field(default_factory=list)
    redelivered: list[tuple[Cost, float]] = field(default_factory=list)
    #: CPU seconds of the process (all threads) per new batch of the CPU phase (meters off).
    cpu: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.meter = RequestMeter(*self.clients)
        self.capacity = CapacityMeter(self.clients)

    def run(self, batch: list[dict[str, Any]], into: list[tuple[Cost, float]] | None) -> float:
        """One batch through the handler, recorded `into` a list when given; its CPU seconds."""
        event = sqs_event(*(sqs_record(body) for body in batch))  # new messageIds every time
        sink = io.StringIO()
        self.meter.clear()
        self.capacity.capacity = Capacity()
        with contextlib.redirect_stdout(sink):
            started, cpu = time.perf_counter(), time.process_time()
            response = self.handler(event, FakeLambdaContext(function_name="benchmark"))
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        failures = response.get("batchItemFailures")
        assert failures == [], f"{self.name}: batch item failures {failures}"
        if into is not None:
            into.append((Cost(self.meter.tally(), self.capacity.capacity), elapsed))
        return cpu

    @contextlib.contextmanager
    def unmetered(self) -> Iterator[None]:
        """The side's clients without the benchmark's hooks (request and capacity meters)."""
        for client in self.clients:
            self.meter.detach(client)
            self.capacity.detach(client)
        try:
            yield
        finally:
            for client in self.clients:
                self.meter.attach(client)
                self.capacity.attach(client)


@dataclass
class Floor:
    """The inbox's requests alone: for each batch of its own orders, the `TransactWriteItems`
    (and the `BatchGetItem` before it, for a library that reads first) the inbox handler makes,
    captured with DynamoDB answered in process (`devkit.captured`) and sent for real, through the
    inbox's client, by `run`."""

    client: Any
    requests: list[list[Captured]]
    cpu: list[float] = field(default_factory=list)

    @classmethod
    def capture(cls, inbox: Side, client: Any, orders: list[list[dict[str, Any]]]) -> Floor:
        with inbox.unmetered():
            requests = [
                capture_requests(client, partial(inbox.run, batch, None)) for batch in orders
            ]
        assert all(
            [name for name, _ in each]
            in (["TransactWriteItems"], ["BatchGetItem", "TransactWriteItems"])
            for each in requests
        ), "the inbox's new batch is no longer one transaction (after at most one read)"
        return cls(client, requests)

    def run(self, n: int) -> float:
        started = time.process_time()
        replay(self.client, self.requests[n])
        return time.process_time() - started


def interleave(
    inbox: Side, baseline: Side, batches: range, phase: str, record: bool = True
) -> None:
    for i in batches:
        pair = (inbox, baseline) if i % 2 == 0 else (baseline, inbox)
        for side in pair:
            side.run(side.orders[i], getattr(side, phase) if record else None)


def measure_cpu(inbox: Side, baseline: Side, floor: Floor, batches: range) -> None:
    """CPU per new batch with the benchmark's meters off (they decode and size every request:
    their cost, not the consumer's), the three interleaved: inbox, floor, baseline in turn."""
    with inbox.unmetered(), baseline.unmetered():
        for n, i in enumerate(batches):
            runs: list[tuple[list[float], Callable[[], float]]] = [
                (inbox.cpu, partial(inbox.run, inbox.orders[i], None)),
                (floor.cpu, partial(floor.run, n)),
                (baseline.cpu, partial(baseline.run, baseline.orders[i], None)),
            ]
            for into, run in runs[n % 3 :] + runs[: n % 3]:
                into.append(run())


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def summarize(samples: list[tuple[Cost, float]]) -> dict[str, Any]:
    tallies = [cost.tally for cost, _ in samples]
    capacities = [cost.capacity for cost, _ in samples]
    ops: Counter[str] = Counter()
    for t in tallies:
        ops.update(t.calls)
    seconds = median([s for _, s in samples])
    return {
        "requests": median([t.requests for t in tallies]),
        "writes": median([t.writes for t in tallies]),
        "sends": median([t.sends for t in tallies]),
        "ops": {op: n / len(tallies) for op, n in sorted(ops.items())},
        "measured_wcu": median([c.measured_wcu for c in capacities])
        if all(c.measured_any for c in capacities)
        else None,
        "computed_wcu": median([c.computed_wcu for c in capacities]),
        "ms": seconds * 1000,
        "dynamodb_ms": median([t.seconds for t in tallies]) * 1000,
        "p90_ms": statistics.quantiles([s for _, s in samples], n=10)[-1] * 1000
        if len(samples) >= 10
        else seconds * 1000,
        "throughput": BATCH_SIZE / seconds if seconds else 0.0,
    }


def fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.{digits}f}"


def ratio(base: float | None, inbox: float | None, inverse: bool = False) -> str:
    if base is None or inbox is None:
        return "n/a"
    num, den = (inbox, base) if inverse else (base, inbox)
    if den == 0:
        return "∞" if num else "—"
    return f"{num / den:.1f}x"


def pair_spread(inbox: list[tuple[Cost, float]], baseline: list[tuple[Cost, float]]) -> str:
    """How much the throughput ratio moves within this run: batch i of each side ran back to
    back, so baseline_i / inbox_i is one paired sample of the ratio."""
    ratios = [b / a for (_, a), (_, b) in zip(inbox, baseline, strict=True) if a > 0]
    if len(ratios) < 4:
        return "Too few batches for the spread of the paired throughput ratio."
    p25, p50, p75 = statistics.quantiles(ratios, n=4)
    return (
        f"Paired throughput ratio (baseline batch time / inbox batch time, batch i of each side "
        f"run back to back), {len(ratios)} pairs: median {p50:.1f}x, "
        f"interquartile range {p25:.1f}x-{p75:.1f}x."
    )


def report(inbox: Side, baseline: Side, floor: Floor, args: argparse.Namespace) -> str:
    a, b = summarize(inbox.new), summarize(baseline.new)
    ra, rb = summarize(inbox.redelivered), summarize(baseline.redelivered)
    measured = a["measured_wcu"] is not None and b["measured_wcu"] is not None
    out = [
        f"10-message SQS batches of new OrderPlaced, {args.lines} line(s) per order; "
        f"{args.batches} batches per side after {args.warmup} warm-up batches; "
        "medians per batch; interleaved on one DynamoDB Local.",
        "",
        "| per 10-message batch | lambda-inbox | Powertools baseline | ratio (baseline / inbox) |",
        "|---|---:|---:|---:|",
        f"| DynamoDB requests, new messages | {fmt(a['requests'])} | {fmt(b['requests'])} "
        f"| {ratio(b['requests'], a['requests'])} |",
        f"| write requests, new messages | {fmt(a['writes'])} | {fmt(b['writes'])} "
        f"| {ratio(b['writes'], a['writes'])} |",
        f"| WCU, new messages (computed) | {fmt(a['computed_wcu'])} | {fmt(b['computed_wcu'])} "
        f"| {ratio(b['computed_wcu'], a['computed_wcu'])} |",
    ]
    if measured:
        out.append(
            f"| WCU, new messages (measured, DynamoDB Local ConsumedCapacity) "
            f"| {fmt(a['measured_wcu'])} | {fmt(b['measured_wcu'])} "
            f"| {ratio(b['measured_wcu'], a['measured_wcu'])} |"
        )
    out += [
        f"| wall time per batch, median (p90) ms | {a['ms']:.1f} ({a['p90_ms']:.1f}) "
        f"| {b['ms']:.1f} ({b['p90_ms']:.1f}) | {ratio(b['ms'], a['ms'])} |",
        f"| of which inside DynamoDB calls, median ms | {a['dynamodb_ms']:.1f} "
        f"| {b['dynamodb_ms']:.1f} | {ratio(b['dynamodb_ms'], a['dynamodb_ms'])} |",
        f"| consumer CPU per batch (process, all threads, meters off), median ms "
        f"| {median(inbox.cpu) * 1000:.1f} | {median(baseline.cpu) * 1000:.1f} "
        f"| {ratio(median(baseline.cpu), median(inbox.cpu))} |",
        f"| throughput, messages/s (10 / median batch time) | {a['throughput']:.0f} "
        f"| {b['throughput']:.0f} | {ratio(b['throughput'], a['throughput'], inverse=True)} "
        "(inbox / baseline) |",
        f"| DynamoDB requests, redelivered batch (new messageIds) | {fmt(ra['requests'])} "
        f"| {fmt(rb['requests'])} | {ratio(rb['requests'], ra['requests'])} |",
        f"| write requests, redelivered batch | {fmt(ra['writes'])} | {fmt(rb['writes'])} "
        f"| {ratio(rb['writes'], ra['writes'])} |",
        f"| WCU, redelivered batch (computed) | {fmt(ra['computed_wcu'])} "
        f"| {fmt(rb['computed_wcu'])} | {ratio(rb['computed_wcu'], ra['computed_wcu'])} |",
    ]
    if ra["measured_wcu"] is not None and rb["measured_wcu"] is not None:
        out.append(
            f"| WCU, redelivered batch (measured) | {fmt(ra['measured_wcu'])} "
            f"| {fmt(rb['measured_wcu'])} | {ratio(rb['measured_wcu'], ra['measured_wcu'])} |"
        )
    out += [
        f"| wall time per redelivered batch, median ms | {ra['ms']:.1f} | {rb['ms']:.1f} "
        f"| {ratio(rb['ms'], ra['ms'])} |",
        "",
        pair_spread(inbox.new, baseline.new),
        "",
        f"CPU, {len(inbox.cpu)} more new batches per side with the meters off: the inbox "
        f"{median(inbox.cpu) * 1000:.2f} ms per batch; its requests alone, sent again "
        f"through its client (the floor no library code can save) "
        f"{median(floor.cpu) * 1000:.2f} ms; the inbox above them "
        f"{(median(inbox.cpu) - median(floor.cpu)) * 1000:.2f} ms.",
        "",
        "Requests per batch by operation (mean):",
        "",
        "| operation | lambda-inbox new | baseline new | lambda-inbox redelivered | baseline redelivered |",
        "|---|---:|---:|---:|---:|",
    ]
    for op in sorted(set(a["ops"]) | set(b["ops"]) | set(ra["ops"]) | set(rb["ops"])):
        out.append(
            f"| {op} | {fmt(a['ops'].get(op, 0))} | {fmt(b['ops'].get(op, 0))} "
            f"| {fmt(ra['ops'].get(op, 0))} | {fmt(rb['ops'].get(op, 0))} |"
        )
    retries = [a["sends"] - a["requests"], b["sends"] - b["requests"]]
    out += [
        "",
        f"HTTP sends minus API calls (SDK retries), median per new batch: "
        f"inbox {fmt(retries[0])}, baseline {fmt(retries[1])}.",
        "WCU computed: 1 per KB for each standard write request (also when its condition fails), "
        "2 per KB for each TransactWriteItems action (ConditionCheck counted like a write); "
        "reads are not WCU. "
        + (
            "Measured: ConsumedCapacity as DynamoDB Local returns it with "
            "ReturnConsumedCapacity=TOTAL, write operations only; DynamoDB Local returns none for "
            "a failed conditional write and its transaction accounting is not AWS's (it reports "
            "2.0 for a transaction of one Put and also of two Puts), so the computed row is the "
            "reference."
            if measured
            else "DynamoDB Local returned no ConsumedCapacity, so only computed WCU are shown."
        ),
    ]
    return "\n".join(out)


def profile_inbox(app: Any, inbox: Side, batches: range) -> AllThreadsProfile:
    """More inbox batches, after the measurement, under a profile of every thread (cProfile
    slows what it watches: never during the measured batches). The consumer's call workers are
    started anew inside the profile, where its per-thread profiles attach."""
    from lambda_inbox._internal.deadline import BoundedCalls  # (this code's; --profile needs it)

    profile = AllThreadsProfile()
    with inbox.unmetered(), profile:
        app.consumer.calls = BoundedCalls(app.consumer.calls.workers)
        for i in batches:
            inbox.run(inbox.orders[i], None)
    return profile


def modelled_network(
    inbox: Side, baseline: Side, latencies: list[float], *, start: int, batches: int
) -> str:
    """Fresh batches of both sides, interleaved, under each modelled per-request delay."""
    if not latencies:
        return ""
    network = ModelledLatency(*inbox.clients, *baseline.clients)
    rows = [
        "Under a modelled network (a fixed delay before every HTTP request of both sides, a "
        f"botocore before-send hook), {batches} new batches per side and delay:",
        "",
        "| delay per request | inbox batch, median ms | baseline batch, median ms "
        "| throughput ratio (medians) | paired ratio: median (IQR) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n, milliseconds in enumerate(latencies):
        network.set(milliseconds / 1000)
        for side in (inbox, baseline):
            side.new.clear()
        first = start + n * batches
        with inbox.unmetered(), baseline.unmetered():  # times only: no counts needed
            interleave(inbox, baseline, range(first, first + batches), "new")
        a, b = median([s for _, s in inbox.new]), median([s for _, s in baseline.new])
        pairs = [y / x for (_, x), (_, y) in zip(inbox.new, baseline.new, strict=True)]
        q1, q2, q3 = statistics.quantiles(pairs, n=4)
        rows.append(
            f"| {milliseconds:g} ms | {a * 1000:.1f} | {b * 1000:.1f} | {b / a:.1f}x "
            f"| {q2:.1f}x ({q1:.1f}x-{q3:.1f}x) |"
        )
    network.set(0)
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=60, help="measured batches per side")
    parser.add_argument("--lines", type=int, default=2, help="order lines (SKUs) per order")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured batches per side")
    parser.add_argument(
        "--latency-ms",
        default="",
        help="also run under a modelled network: delays per request, e.g. 0,3,8",
    )
    parser.add_argument("--profile", action="store_true", help="all-thread profile of the inbox")
    args = parser.parse_args()
    latencies = [float(ms) for ms in args.latency_ms.split(",") if ms.strip()]
    total = args.warmup + args.batches
    rounds = total + args.batches * (1 + len(latencies) + (1 if args.profile else 0))

    use_offline_aws(**POWERTOOLS_ENV)
    os.environ.pop("DEAD_LETTER_QUEUE_URL", None)

    with dynamodb_local_or_exit() as endpoint:
        ddb = local_client("dynamodb", endpoint)
        suffix = uuid.uuid4().hex[:8]
        inbox_table, inbox_domain = f"inbox-{suffix}", f"inbox-domain-{suffix}"
        idem_table, base_domain = f"idempotency-{suffix}", f"baseline-domain-{suffix}"
        create_inbox_table(ddb, inbox_table)
        create_domain_table(ddb, inbox_domain)
        create_domain_table(ddb, base_domain)
        ddb.create_table(
            TableName=idem_table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        )
        ddb.get_waiter("table_exists").wait(TableName=idem_table)

        inbox_orders = make_orders(f"i{suffix}", rounds, args.lines)
        # The profiled batches (if any) are the inbox's alone.
        base_orders = make_orders(f"b{suffix}", rounds - args.profile * args.batches, args.lines)
        floor_orders = make_orders(f"f{suffix}", args.batches, args.lines)
        seed_stock(ddb, inbox_domain, stock_for(inbox_orders + floor_orders))
        seed_stock(ddb, base_domain, stock_for(base_orders))

        # Both handlers read their environment at import.
        os.environ.update(
            AWS_ENDPOINT_URL_DYNAMODB=endpoint, INBOX_TABLE=inbox_table, DOMAIN_TABLE=inbox_domain
        )
        app = load_function("order_events")
        os.environ.update(IDEMPOTENCY_TABLE=idem_table, DOMAIN_TABLE=base_domain)
        ref = importlib.import_module("reference_powertools_consumer")  # benchmarks/ is on the path
        inbox = Side(
            "lambda-inbox", app.handler, [app.consumer.dynamodb], inbox_domain, inbox_orders
        )
        baseline = Side(
            "powertools",
            ref.handler,
            [ref.persistence_layer.client, ref.dynamodb],
            base_domain,
            base_orders,
        )

        interleave(inbox, baseline, range(args.warmup), "new", record=False)
        interleave(inbox, baseline, range(args.warmup, total), "new")
        interleave(inbox, baseline, range(args.warmup, total), "redelivered")
        floor = Floor.capture(inbox, app.consumer.dynamodb, floor_orders)
        measure_cpu(inbox, baseline, floor, range(total, total + args.batches))
        profiled = total + args.batches * (1 + len(latencies))
        profile = profile_inbox(app, inbox, range(profiled, rounds)) if args.profile else None
        summary = report(inbox, baseline, floor, args)
        modelled = modelled_network(
            inbox, baseline, latencies, start=total + args.batches, batches=args.batches
        )

        checked = (
            verify(ddb, inbox_domain, inbox_orders + floor_orders),
            verify(ddb, base_domain, base_orders),
        )
        print(summary)
        if modelled:
            print("\n" + modelled)
        if profile is not None:
            print(f"\nAll-thread profile of {args.batches} more inbox batches (tottime):\n")
            print(profile.top(25))
        print(
            f"\nEnd state verified after redelivery: {checked[0]} stock/shipment items (inbox), "
            f"{checked[1]} (baseline): every SKU reserved exactly once, one shipment per order."
        )


if __name__ == "__main__":
    main()
