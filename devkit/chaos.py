"""Chaos at scale: orders, payments and notifications under duplicates, crashes, conflicts and
throttling, with 8 concurrent consumers on one DynamoDB Local; effects checked from the tables.

    .venv/bin/python benchmarks/chaos.py [--deliveries 100000] [--seed N] [--consumers 8]

What runs (each "consumer" is a thread standing for one warm Lambda container that holds its own
copy of the three functions, `functions/*/app.py` loaded as the tests load them, each with its own
boto3 clients):

- order_events (SQS batches of 10), payment_events (MSK batches of 50 over 10 partitions) and
  customer_notifications (SQS batches of 10, leased mode, a webhook on 127.0.0.1) share one inbox
  table and one domain table on DynamoDB Local, as in the template; each has its own SQS
  dead-letter queue on a moto server.
- The stream: `--deliveries` deliveries, of which `--duplicates` (default 35%) repeat an event
  already in the stream, half with the same transport id (SQS messageId / Kafka partition and
  offset: the broker's at-least-once delivery) and half with a new one (a producer retry). A few
  events are logical duplicates (a new event_id for an order or payment already sent), a few are
  poison (invalid payloads; for notifications also a webhook that refuses with 422). Hot keys:
  most orders touch a handful of SKUs, most payments and notifications a handful of customers.
- Faults, drawn from seeded generators (one per consumer thread): a crash (an exception no code
  under test catches, as if the runtime died) just before and just after every committing call
  (`TransactWriteItems` before its HTTP send / after its response; the lease claim `PutItem`;
  the dead-letter `SendMessage`), the batch response lost after the handler returned (the whole
  batch comes back), throttling and transaction conflicts answered instead of DynamoDB by a
  `before-send` hook (`ThrottlingException` / `ProvisionedThroughputExceededException`, HTTP 400,
  which botocore retries; `TransactionConflict` cancellations: DynamoDB Local serialises
  concurrent transactions on an item rather than cancelling them, so real conflicts are rare
  here), transient webhook errors (503).
- Every delivery reported failed, or lost to a crash, is delivered again (same transport id,
  receive count + 1) after a short visibility delay, until nothing is pending, as the event
  source would.

At the end everything is computed from the tables (and the DLQs and the webhook's log): lost
(a distinct event whose effect is missing), double-applied (an effect applied twice), poison
dead-lettered, requests and write units per message by workload. Exit status 1 when lost or
double-applied is not 0.

The seed fixes the workload and each thread's fault sequence; how the threads interleave (and so
which call meets which fault, and where real conflicts occur) is up to the machine.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import heapq
import json
import logging
import math
import os
import random
import statistics
import sys
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer
from botocore.awsrequest import AWSPreparedRequest, AWSResponse

from devkit.faults import dynamodb_error
from devkit.handlers import load_function
from devkit.tables import create_domain_table, create_inbox_table, delete_table, seed_stock
from lambda_inbox_tools.local.webhook import serve_webhook
from lambda_inbox_tools.services.offline import patched_environ

ORDERS, PAYMENTS, NOTIFICATIONS = "orders", "payments", "notifications"
WORKLOADS = (ORDERS, PAYMENTS, NOTIFICATIONS)
FUNCTIONS = {
    ORDERS: "order_events",
    PAYMENTS: "payment_events",
    NOTIFICATIONS: "customer_notifications",
}
CONSUMER_NAMES = {
    ORDERS: "order-events",
    PAYMENTS: "payment-events",
    NOTIFICATIONS: "customer-notifications",
}
QUEUE_ARNS = {
    ORDERS: "arn:aws:sqs:us-east-1:123456789012:lambda-inbox-OrderEventsQueue",
    NOTIFICATIONS: "arn:aws:sqs:us-east-1:123456789012:lambda-inbox-NotificationQueue",
}
KAFKA_ARN = "arn:aws:kafka:us-east-1:123456789012:cluster/payments/chaos"
TOPIC = "payments"
SCARCE_SKU = "SKU-SCARCE"  # stock 0: an order with it is rejected, deterministically
PLENTY = 10**12
REFUSED_TEMPLATE = "refused-by-webhook"  # the webhook answers 422: poison
CRASH_KINDS = (
    "before TransactWriteItems",
    "after TransactWriteItems",
    "before lease claim PutItem",
    "after lease claim PutItem",
    "before DLQ SendMessage",
    "after DLQ SendMessage",
    "before acknowledgement (batch response lost)",
)
THROTTLE_CODES = ("ThrottlingException", "ProvisionedThroughputExceededException")
POWERTOOLS_ENV = {
    "POWERTOOLS_LOG_LEVEL": "CRITICAL",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "Chaos",
    "POWERTOOLS_SERVICE_NAME": "chaos",
}


class Crash(BaseException):
    """The runtime died here. A BaseException: nothing in the code under test catches it."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass(frozen=True)
class ChaosConfig:
    deliveries: int = 100_000
    seed: int = 20_241_121
    consumers: int = 8
    #: Share of the stream's deliveries that repeat an event already in the stream.
    duplicates: float = 0.35
    #: Of those, the share that keeps the transport id (the rest gets a new one).
    same_transport_id: float = 0.5
    #: Share of distinct events that are poison, and that are logical duplicates.
    poison: float = 0.01
    logical_duplicates: float = 0.03
    #: Workload mix of the distinct events: orders, payments, notifications.
    mix: tuple[float, float, float] = (0.4, 0.4, 0.2)
    #: Probability of a crash at each crash point, per committing call (and per invocation for
    #: the lost response).
    crash_rate: float = 0.01
    #: Probability that an HTTP send to DynamoDB is answered with throttling instead.
    throttle_rate: float = 0.003
    #: Probability that a TransactWriteItems send is answered with a TransactionConflict
    #: cancellation instead (on top of the real conflicts between concurrent consumers).
    conflict_rate: float = 0.005
    webhook_error_rate: float = 0.02
    rejected_orders: float = 0.02
    sqs_batch: int = 10
    kafka_batch: int = 50
    kafka_partitions: int = 10
    lease_seconds: float = 2.0
    #: Visibility delay before a failed delivery comes back.
    redelivery_delay: float = 0.05
    lambda_timeout: float = 30.0
    hot_share: float = 0.7
    hot_skus: int = 10
    skus: int = 400
    hot_customers: int = 5
    customers: int = 2000


# ------------------------------------------------------------------------------------ workload


@dataclass
class Event:
    workload: str
    event_id: str
    body: dict[str, Any]
    poison: bool = False
    #: The order_id / payment_id whose effect this event stands for (notifications: event_id).
    entity: str = ""


@dataclass
class Delivery:
    workload: str
    event_id: str
    transport_id: str  # SQS messageId, or "topic-partition:offset"
    record: dict[str, Any]
    attempt: int = 1


def _json(body: Mapping[str, Any]) -> str:
    return json.dumps(dict(body), separators=(",", ":"))


def sqs_record(workload: str, body: Mapping[str, Any], message_id: str) -> dict[str, Any]:
    text = _json(body)
    return {
        "messageId": message_id,
        "receiptHandle": base64.b64encode(uuid.uuid4().bytes).decode("ascii"),
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1732190520010",
            "SenderId": "AIDAEXAMPLEPRODUCER01",
            "ApproximateFirstReceiveTimestamp": "1732190520047",
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(text.encode("utf-8")).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARNS[workload],
        "awsRegion": "us-east-1",
    }


def kafka_record(body: Mapping[str, Any], partition: int, offset: int, key: str) -> dict[str, Any]:
    return {
        "topic": TOPIC,
        "partition": partition,
        "offset": offset,
        "timestamp": 1732190760000 + offset,
        "timestampType": "CREATE_TIME",
        "key": base64.b64encode(key.encode()).decode("ascii"),
        "value": base64.b64encode(_json(body).encode()).decode("ascii"),
        "headers": [],
    }


@dataclass
class Workload:
    """The distinct events, the stream of deliveries, and what the tables must show."""

    events: dict[str, Event]
    stream: list[Delivery]
    stock: dict[str, int]
    #: orders: order_id -> (expected record "SHIPMENT" | "REJECTION", quantities, event_ids)
    orders: dict[str, tuple[str, dict[str, int], set[str]]]
    #: payments: payment_id -> (customer, amount, event_ids)
    payments: dict[str, tuple[str, int, set[str]]]
    #: notifications: event_id -> customer
    notifications: dict[str, str]
    poison: dict[str, set[str]]  # workload -> poison event ids
    stream_duplicates: Counter[str] = field(default_factory=Counter)
    same_id_duplicates: Counter[str] = field(default_factory=Counter)


def build_workload(config: ChaosConfig) -> Workload:
    rng = random.Random(config.seed)
    distinct = max(3, round(config.deliveries * (1 - config.duplicates)))
    hot_skus = [f"SKU-HOT-{n}" for n in range(config.hot_skus)]
    cold_skus = [f"SKU-{n:04d}" for n in range(config.skus)]
    hot_customers = [f"cust-hot-{n}" for n in range(config.hot_customers)]
    cold_customers = [f"cust-{n:05d}" for n in range(config.customers)]

    def sku() -> str:
        return rng.choice(hot_skus if rng.random() < config.hot_share else cold_skus)

    def customer() -> str:
        return rng.choice(hot_customers if rng.random() < config.hot_share else cold_customers)

    events: dict[str, Event] = {}
    orders: dict[str, tuple[str, dict[str, int], set[str]]] = {}
    order_bodies: list[dict[str, Any]] = []
    payments: dict[str, tuple[str, int, set[str]]] = {}
    payment_bodies: list[dict[str, Any]] = []
    notifications: dict[str, str] = {}
    poison: dict[str, set[str]] = {w: set() for w in WORKLOADS}
    weights = list(config.mix)
    for n in range(distinct):
        workload = WORKLOADS[n % 3] if n < 3 else rng.choices(WORKLOADS, weights)[0]
        event_id = f"evt-{n:07d}"
        is_poison = rng.random() < config.poison
        logical = not is_poison and rng.random() < config.logical_duplicates
        if workload == ORDERS:
            if logical and order_bodies:
                body = {**rng.choice(order_bodies), "event_id": event_id}
                orders[body["order_id"]][2].add(event_id)
            else:
                lines: dict[str, int] = {}
                for _ in range(rng.randint(1, 3)):
                    chosen = sku()
                    lines[chosen] = lines.get(chosen, 0) + rng.randint(1, 3)
                if rng.random() < config.rejected_orders:
                    lines[SCARCE_SKU] = 1
                body = {
                    "event_id": event_id,
                    "order_id": f"ord-{n:07d}",
                    "customer_id": customer(),
                    "lines": [{"sku": s, "qty": q} for s, q in lines.items()],
                    "total_cents": rng.randint(100, 50_000),
                }
                if is_poison:
                    body["lines"][0]["qty"] = 0  # qty must be > 0
                else:
                    record = "REJECTION" if SCARCE_SKU in lines else "SHIPMENT"
                    orders[body["order_id"]] = (record, lines, {event_id})
                    order_bodies.append(body)
            entity = str(body["order_id"])
        elif workload == PAYMENTS:
            if logical and payment_bodies:
                body = {**rng.choice(payment_bodies), "event_id": event_id}
                payments[body["payment_id"]][2].add(event_id)
            else:
                body = {
                    "event_id": event_id,
                    "payment_id": f"pay-{n:07d}",
                    "order_id": f"ord-{n:07d}",
                    "customer_id": customer(),
                    "amount_cents": rng.randint(1, 5000),
                }
                if is_poison:
                    body["amount_cents"] = 0  # must be > 0
                else:
                    payments[body["payment_id"]] = (
                        body["customer_id"],
                        body["amount_cents"],
                        {event_id},
                    )
                    payment_bodies.append(body)
            entity = str(body["payment_id"])
        else:
            body = {
                "event_id": event_id,
                "customer_id": customer(),
                "order_id": f"ord-{n:07d}",
                "template": rng.choice(["order-shipped", "payment-received", "welcome"]),
            }
            if is_poison:  # half invalid, half refused by the webhook (HTTP 422)
                body["template"] = "" if rng.random() < 0.5 else REFUSED_TEMPLATE
            else:
                notifications[event_id] = str(body["customer_id"])
            entity = event_id
        if is_poison:
            poison[workload].add(event_id)
        events[event_id] = Event(workload, event_id, body, is_poison, entity)

    next_offset = [0] * config.kafka_partitions

    def transport(event: Event) -> Delivery:
        if event.workload == PAYMENTS:
            key = str(event.body.get("customer_id", event.event_id))
            partition = int(hashlib.sha256(key.encode()).hexdigest(), 16) % config.kafka_partitions
            offset = next_offset[partition]
            next_offset[partition] += 1
            record = kafka_record(event.body, partition, offset, key)
            return Delivery(event.workload, event.event_id, f"{TOPIC}-{partition}:{offset}", record)
        message_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        return Delivery(
            event.workload,
            event.event_id,
            message_id,
            sqs_record(event.workload, event.body, message_id),
        )

    stream = [transport(event) for event in events.values()]
    originals = list(stream)
    result = Workload(events, [], {}, orders, payments, notifications, poison)
    for _ in range(config.deliveries - len(stream)):
        original = rng.choice(originals)
        result.stream_duplicates[original.workload] += 1
        if rng.random() < config.same_transport_id:
            result.same_id_duplicates[original.workload] += 1
            stream.append(
                Delivery(
                    original.workload, original.event_id, original.transport_id, original.record
                )
            )
        else:
            stream.append(transport(events[original.event_id]))
    rng.shuffle(stream)
    result.stream = stream
    stock = {s: PLENTY for s in hot_skus + cold_skus}
    stock[SCARCE_SKU] = 0
    result.stock = stock
    return result


# ------------------------------------------------------------------------------------- webhook


class WebhookReceiver:
    """A provider on 127.0.0.1 that honours `Idempotency-Key`: the first successful call of a key
    is applied, later calls with that key are answered 200 without applying anything again."""

    def __init__(self, error_rate: float, seed: int) -> None:
        self.error_rate = error_rate
        self.rng = random.Random(seed)
        self.calls: Counter[str] = Counter()
        self.applied: Counter[str] = Counter()
        self.absorbed = 0
        self.refused = 0
        self.errors = 0
        self.url = ""
        self.lock = threading.Lock()
        #: Called (once) with the key of the next call, before it is answered (tests).
        self.during_call: Callable[[str], None] | None = None

    def answer(self, key: str, body: Mapping[str, Any]) -> int:
        with self.lock:
            hook, self.during_call = self.during_call, None
        if hook is not None:
            hook(key)
        with self.lock:
            self.calls[key] += 1
            if body.get("template") == REFUSED_TEMPLATE:
                self.refused += 1
                return 422
            if self.rng.random() < self.error_rate:
                self.errors += 1
                return 503
            if self.applied[key]:
                self.absorbed += 1
            else:
                self.applied[key] += 1
            return 200


@contextlib.contextmanager
def running_webhook(receiver: WebhookReceiver) -> Iterator[WebhookReceiver]:
    def answer(key: str, raw: bytes) -> int:
        return receiver.answer(key, json.loads(raw or b"{}"))

    with serve_webhook(answer) as url:
        receiver.url = url
        yield receiver


# ----------------------------------------------------------------------- meters and faults


@dataclass
class Stats:
    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    sends: Counter[str] = field(default_factory=Counter)
    wcu: Counter[str] = field(default_factory=Counter)
    wcu_cancelled: Counter[str] = field(default_factory=Counter)
    rcu_halves: Counter[str] = field(default_factory=Counter)  # RCU x 2, by workload
    crashes: Counter[str] = field(default_factory=Counter)
    throttles: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)  # CancellationReasons codes
    cancelled_transactions: int = 0
    injected_conflicts: int = 0
    conflict_transactions: int = 0
    invocations: Counter[str] = field(default_factory=Counter)
    deliveries: Counter[str] = field(default_factory=Counter)
    failures_reported: Counter[str] = field(default_factory=Counter)
    batch_seconds: dict[str, list[float]] = field(
        default_factory=lambda: {w: [] for w in WORKLOADS}
    )

    def merge(self, other: Stats) -> None:
        for name in (
            "requests", "sends", "wcu", "wcu_cancelled", "rcu_halves", "crashes", "throttles",
            "reasons", "invocations", "deliveries", "failures_reported",
        ):  # fmt: skip
            getattr(self, name).update(getattr(other, name))
        self.cancelled_transactions += other.cancelled_transactions
        self.injected_conflicts += other.injected_conflicts
        self.conflict_transactions += other.conflict_transactions
        for workload, values in other.batch_seconds.items():
            self.batch_seconds[workload].extend(values)


def attribute_bytes(value: Mapping[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind in ("S", "B"):
        return len(str(inner).encode("utf-8"))
    if kind == "N":
        return 1 + math.ceil(len(str(inner).lstrip("-").replace(".", "")) / 2)
    if kind == "M":
        return 3 + sum(len(k.encode()) + 1 + attribute_bytes(v) for k, v in inner.items())
    if kind == "L":
        return 3 + sum(1 + attribute_bytes(v) for v in inner)
    if kind in ("SS", "NS", "BS"):
        return sum(len(str(v)) for v in inner)
    return 1  # BOOL, NULL


def item_kb(item: Mapping[str, Any]) -> int:
    size = sum(len(name.encode()) + attribute_bytes(value) for name, value in item.items())
    return max(1, math.ceil(size / 1024))


def write_units(operation: str, params: Mapping[str, Any]) -> int:
    """WCU as docs/PERFORMANCE.md computes them: 2 per KB per transaction action (a
    ConditionCheck too), 1 per KB per standard write; updates counted as 1 KB (small items)."""
    if operation == "TransactWriteItems":
        units = 0
        for action in params.get("TransactItems", []):
            put = action.get("Put")
            units += 2 * (item_kb(put["Item"]) if put else 1)
        return units
    if operation == "PutItem":
        return item_kb(params.get("Item", {}))
    if operation in ("UpdateItem", "DeleteItem"):
        return 1
    return 0


def read_half_units(operation: str, params: Mapping[str, Any]) -> int:
    """RCU x 2: 0.5 per key of an eventually consistent BatchGetItem (items under 4 KB), 1 per
    strongly consistent GetItem."""
    if operation == "BatchGetItem":
        return sum(len(v.get("Keys", [])) for v in params.get("RequestItems", {}).values())
    if operation == "GetItem":
        return 2 if params.get("ConsistentRead") else 1
    return 0


class Container:
    """One warm Lambda container: the three functions with their clients, meters and faults."""

    def __init__(
        self,
        index: int,
        modules: dict[str, ModuleType],
        config: ChaosConfig,
    ) -> None:
        self.index = index
        self.modules = modules
        self.config = config
        self.rng = random.Random(f"{config.seed}/{index}")
        self.stats = Stats()
        self._lock = threading.Lock()
        for workload, module in modules.items():
            self._instrument(workload, module)

    def roll(self, probability: float) -> bool:
        with self._lock:
            return self.rng.random() < probability

    def crash(self, kind: str) -> None:
        with self._lock:
            self.stats.crashes[kind] += 1
        raise Crash(kind)

    def _instrument(self, workload: str, module: ModuleType) -> None:
        dynamodb = module.consumer.dynamodb
        events = dynamodb.meta.events
        rate = self.config.crash_rate

        def before_parameter_build(
            model: Any, params: Mapping[str, Any], context: dict[str, Any], **_: Any
        ) -> None:
            operation = model.name
            context["chaos_wcu"] = write_units(operation, params)
            context["chaos_rcu_halves"] = read_half_units(operation, params)
            item = params.get("Item", {}) if operation == "PutItem" else {}
            context["chaos_claim"] = item.get("status") == {"S": "IN_PROGRESS"}

        def before_call(model: Any, context: dict[str, Any], **_: Any) -> None:
            with self._lock:
                self.stats.requests[(workload, model.name)] += 1
                self.stats.rcu_halves[workload] += int(context.get("chaos_rcu_halves", 0))
            if context.get("chaos_claim") and self.roll(rate):
                self.crash("before lease claim PutItem")

        def before_send(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
            with self._lock:
                self.stats.sends[workload] += 1
            if self.roll(self.config.throttle_rate):
                code = THROTTLE_CODES[self.rng.randrange(2)]
                with self._lock:
                    self.stats.throttles[code] += 1
                return dynamodb_error(
                    request, code, "injected: rate of requests exceeds the allowed"
                )
            return None

        def before_send_transaction(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
            if self.roll(rate):
                self.crash("before TransactWriteItems")
            if self.roll(self.config.conflict_rate):
                body = request.body
                items = json.loads(body if isinstance(body, (bytes, str)) else b"{}")
                count = len(items.get("TransactItems", []))
                with self._lock:
                    self.stats.injected_conflicts += 1
                return dynamodb_error(
                    request,
                    "TransactionCanceledException",
                    "Transaction cancelled, please refer cancellation reasons for specific reasons "
                    f"[{', '.join(['TransactionConflict'] * count)}]",
                    CancellationReasons=[
                        {"Code": "TransactionConflict", "Message": "injected conflict"}
                    ]
                    * count,
                )
            return None

        def after_call(
            http_response: Any,
            parsed: Mapping[str, Any],
            model: Any,
            context: dict[str, Any],
            **_: Any,
        ) -> None:
            operation = model.name
            units = int(context.get("chaos_wcu", 0))
            code = (
                parsed.get("Error", {}).get("Code", "") if http_response.status_code >= 300 else ""
            )
            with self._lock:
                if not code or code == "ConditionalCheckFailedException":
                    self.stats.wcu[workload] += units
                elif code == "TransactionCanceledException":
                    self.stats.wcu_cancelled[workload] += units
                    self.stats.cancelled_transactions += 1
                    codes = [r.get("Code", "None") for r in parsed.get("CancellationReasons") or []]
                    self.stats.reasons.update(code for code in codes if code != "None")
                    if "TransactionConflict" in codes:
                        self.stats.conflict_transactions += 1
            if http_response.status_code == 200:
                if operation == "TransactWriteItems" and self.roll(rate):
                    self.crash("after TransactWriteItems")
                if context.get("chaos_claim") and self.roll(rate):
                    self.crash("after lease claim PutItem")

        events.register("before-parameter-build.dynamodb", before_parameter_build)
        events.register("before-call.dynamodb", before_call)
        events.register("before-send.dynamodb", before_send)
        events.register("before-send.dynamodb.TransactWriteItems", before_send_transaction)
        events.register("after-call.dynamodb", after_call)

        queue = module.consumer.dead_letter_queue
        if queue is None:
            return
        sqs = queue.client  # built now, so the hooks are on the client that sends

        def before_dlq(**_: Any) -> None:
            if self.roll(rate):
                self.crash("before DLQ SendMessage")

        def after_dlq(http_response: Any, **_: Any) -> None:
            if http_response.status_code == 200 and self.roll(rate):
                self.crash("after DLQ SendMessage")

        sqs.meta.events.register("before-call.sqs.SendMessage", before_dlq)
        sqs.meta.events.register("after-call.sqs.SendMessage", after_dlq)


class LambdaContext:
    def __init__(self, seconds: float) -> None:
        self._ends = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(max(0.0, self._ends - time.monotonic()) * 1000)


# -------------------------------------------------------------------------------- the source


class EventSource:
    """Pending deliveries per workload; failed ones come back after a visibility delay."""

    def __init__(self, stream: list[Delivery], config: ChaosConfig) -> None:
        self.config = config
        self.ready: dict[str, list[Delivery]] = {w: [] for w in WORKLOADS}
        for delivery in reversed(stream):  # popped from the end: stream order
            self.ready[delivery.workload].append(delivery)
        self.delayed: list[tuple[float, int, Delivery]] = []
        self.in_flight = 0
        self.redelivered: Counter[str] = Counter()
        self._seq = 0
        self._cond = threading.Condition()

    def take(self, turn: int) -> tuple[str, list[Delivery]] | None:
        """The next batch (one workload), or None when everything is settled."""
        with self._cond:
            while True:
                now = time.monotonic()
                while self.delayed and self.delayed[0][0] <= now:
                    _, _, delivery = heapq.heappop(self.delayed)
                    self.ready[delivery.workload].append(delivery)
                order = WORKLOADS[turn % 3 :] + WORKLOADS[: turn % 3]
                for workload in order:
                    if self.ready[workload]:
                        self.in_flight += 1
                        return workload, self._batch(workload)
                if not self.delayed and self.in_flight == 0:
                    self._cond.notify_all()
                    return None
                wait = self.delayed[0][0] - now if self.delayed else 0.5
                self._cond.wait(max(0.001, min(wait, 0.5)))

    def _batch(self, workload: str) -> list[Delivery]:
        size = self.config.kafka_batch if workload == PAYMENTS else self.config.sqs_batch
        pending = self.ready[workload]
        batch: list[Delivery] = []
        seen: set[str] = set()
        skipped: list[Delivery] = []
        while pending and len(batch) < size:
            delivery = pending.pop()
            if delivery.transport_id in seen:  # a broker never hands out one id twice in a batch
                skipped.append(delivery)
            else:
                seen.add(delivery.transport_id)
                batch.append(delivery)
        pending.extend(reversed(skipped))
        return batch

    def settle(self, workload: str, again: list[Delivery]) -> None:
        with self._cond:
            self.in_flight -= 1
            delay = self.config.redelivery_delay
            if workload == NOTIFICATIONS:  # a held lease needs its expiry before a retry helps
                delay = max(delay, self.config.lease_seconds / 4)
            for delivery in again:
                self.redelivered[workload] += 1
                self._seq += 1
                heapq.heappush(
                    self.delayed, (time.monotonic() + delay, self._seq, _redeliver(delivery))
                )
            self._cond.notify_all()


def _redeliver(delivery: Delivery) -> Delivery:
    record = dict(delivery.record)
    if delivery.workload != PAYMENTS:
        attributes = dict(record["attributes"])
        attributes["ApproximateReceiveCount"] = str(delivery.attempt + 1)
        record["attributes"] = attributes
        record["receiptHandle"] = base64.b64encode(uuid.uuid4().bytes).decode("ascii")
    return Delivery(
        delivery.workload, delivery.event_id, delivery.transport_id, record, delivery.attempt + 1
    )


def _event(workload: str, batch: list[Delivery]) -> dict[str, Any]:
    if workload != PAYMENTS:
        return {"Records": [delivery.record for delivery in batch]}
    grouped: dict[str, list[dict[str, Any]]] = {}
    for delivery in batch:
        grouped.setdefault(f"{TOPIC}-{delivery.record['partition']}", []).append(delivery.record)
    for records in grouped.values():
        records.sort(key=lambda raw: int(raw["offset"]))
    return {"eventSource": "aws:kafka", "eventSourceArn": KAFKA_ARN, "records": grouped}


def _failed(workload: str, batch: list[Delivery], response: Mapping[str, Any]) -> list[Delivery]:
    ids = set()
    for failure in response["batchItemFailures"]:
        ident = failure["itemIdentifier"]
        ids.add(f"{ident['topic-partition']}:{ident['offset']}" if workload == PAYMENTS else ident)
    return [delivery for delivery in batch if delivery.transport_id in ids]


def consume(container: Container, source: EventSource) -> None:
    stats = container.stats
    turn = container.index
    while True:
        taken = source.take(turn)
        if taken is None:
            return
        turn += 1
        workload, batch = taken
        again: list[Delivery] = batch
        try:
            started = time.perf_counter()
            try:
                response = container.modules[workload].handler(
                    _event(workload, batch), LambdaContext(container.config.lambda_timeout)
                )
            finally:
                elapsed = time.perf_counter() - started
                with container._lock:
                    stats.invocations[workload] += 1
                    stats.deliveries[workload] += len(batch)
                    stats.batch_seconds[workload].append(elapsed)
            if container.roll(container.config.crash_rate):
                container.crash("before acknowledgement (batch response lost)")
            again = _failed(workload, batch, response)
            with container._lock:
                stats.failures_reported[workload] += len(again)
        except Crash:
            again = batch
        finally:
            source.settle(workload, again)


# ------------------------------------------------------------------------------------ checking

_deserializer = TypeDeserializer()


def scan(client: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        items.extend(
            {k: _deserializer.deserialize(v) for k, v in item.items()} for item in page["Items"]
        )
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def drain(sqs: Any, queue_url: str) -> list[str]:
    """The `inbox-message-key` of every message in a DLQ (deleted once received)."""
    keys: list[str] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
            VisibilityTimeout=300, WaitTimeSeconds=0,
        ).get("Messages", [])  # fmt: skip
        if not batch:
            return keys
        keys.extend(m["MessageAttributes"]["inbox-message-key"]["StringValue"] for m in batch)
        sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(batch)
            ],
        )


@dataclass
class Verdict:
    lost: Counter[str] = field(default_factory=Counter)
    double_applied: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    dead_lettered: Counter[str] = field(default_factory=Counter)  # distinct keys
    dlq_messages: Counter[str] = field(default_factory=Counter)
    poison_sent: Counter[str] = field(default_factory=Counter)
    poison_not_marked_failed: Counter[str] = field(default_factory=Counter)
    webhook_calls: int = 0
    webhook_keys_called_again: int = 0

    def note(self, counter: Counter[str], workload: str, problem: str) -> None:
        counter[workload] += 1
        if len(self.problems) < 20:
            self.problems.append(f"{workload}: {problem}")


def verify(
    workload: Workload,
    admin: Any,
    inbox_table: str,
    domain_table: str,
    sqs: Any,
    dlq_urls: Mapping[str, str],
    webhook: WebhookReceiver,
) -> Verdict:
    verdict = Verdict()
    lost, double = verdict.lost, verdict.double_applied
    inbox = {tuple(str(item["pk"]).split("#", 1)): item for item in scan(admin, inbox_table)}
    domain = scan(admin, domain_table)

    def status(event: Event) -> str | None:
        item = inbox.get((CONSUMER_NAMES[event.workload], event.event_id))
        return None if item is None else str(item["status"])

    effect_missing: set[str] = set()
    # orders
    records: dict[str, dict[str, dict[str, Any]]] = {}
    stock: dict[str, tuple[int, int]] = {}
    payment_items: dict[str, dict[str, Any]] = {}
    balances: dict[str, tuple[int, int]] = {}
    notes: dict[str, dict[str, Any]] = {}
    for item in domain:
        pk, sk = str(item["pk"]), str(item["sk"])
        if pk.startswith("ORDER#"):
            records.setdefault(pk.removeprefix("ORDER#"), {})[sk] = item
        elif sk == "STOCK":
            stock[pk.removeprefix("SKU#")] = (int(item["available"]), int(item["reserved"]))
        elif sk.startswith("PAYMENT#"):
            payment_items[sk.removeprefix("PAYMENT#")] = item
        elif sk == "BALANCE":
            balances[pk.removeprefix("CUSTOMER#")] = (
                int(item["balance_cents"]),
                int(item["payments"]),
            )
        elif sk.startswith("NOTIFICATION#"):
            notes[sk.removeprefix("NOTIFICATION#")] = item
    expected_reserved: Counter[str] = Counter()
    for order_id, (kind, lines, event_ids) in workload.orders.items():
        found = records.get(order_id, {})
        if len(found) > 1:
            verdict.note(double, ORDERS, f"order {order_id} has {sorted(found)}")
        if kind not in found:
            effect_missing.update(event_ids)
        elif str(found[kind]["event_id"]) not in event_ids:
            verdict.note(double, ORDERS, f"order {order_id} recorded for a foreign event")
        if kind == "SHIPMENT":
            expected_reserved.update(lines)
    for order_id in set(records) - set(workload.orders):
        verdict.note(double, ORDERS, f"order {order_id} recorded but never (validly) sent")
    for sku, initial in workload.stock.items():
        available, reserved = stock.get(sku, (initial, 0))
        if reserved > expected_reserved[sku] or available + reserved != initial:
            verdict.note(
                double, ORDERS, f"{sku}: reserved {reserved}, expected {expected_reserved[sku]}"
            )
        elif reserved < expected_reserved[sku]:
            verdict.note(
                lost, ORDERS, f"{sku}: reserved {reserved}, expected {expected_reserved[sku]}"
            )
    # payments
    expected_balance: dict[str, tuple[int, int]] = {}
    item_balance: dict[str, tuple[int, int]] = {}
    for payment_id, (customer, amount, event_ids) in workload.payments.items():
        cents, count = expected_balance.get(customer, (0, 0))
        expected_balance[customer] = (cents + amount, count + 1)
        stored = payment_items.get(payment_id)
        if stored is None:
            effect_missing.update(event_ids)
            continue
        if str(stored["event_id"]) not in event_ids or int(stored["amount_cents"]) != amount:
            verdict.note(double, PAYMENTS, f"payment {payment_id} recorded for a foreign event")
        cents, count = item_balance.get(customer, (0, 0))
        item_balance[customer] = (cents + int(stored["amount_cents"]), count + 1)
    for payment_id in set(payment_items) - set(workload.payments):
        verdict.note(double, PAYMENTS, f"payment {payment_id} recorded but never (validly) sent")
    for customer in set(expected_balance) | set(balances):
        have = balances.get(customer, (0, 0))
        want = expected_balance.get(customer, (0, 0))
        from_items = item_balance.get(customer, (0, 0))
        if any(h > w for h, w in zip(have, want, strict=True)) or any(
            h > i for h, i in zip(have, from_items, strict=True)
        ):
            verdict.note(
                double,
                PAYMENTS,
                f"{customer}: balance {have}, payments sum {from_items}, expected {want}",
            )
        elif have != want:
            verdict.note(lost, PAYMENTS, f"{customer}: balance {have}, expected {want}")
    # notifications
    verdict.webhook_calls = sum(webhook.calls.values())
    verdict.webhook_keys_called_again = sum(1 for n in webhook.calls.values() if n > 1)
    for event_id in workload.notifications:
        if event_id not in notes or webhook.applied[event_id] != 1:
            effect_missing.add(event_id)
    for event_id in notes:
        if event_id not in workload.notifications:
            verdict.note(
                double, NOTIFICATIONS, f"notification {event_id} recorded but never (validly) sent"
            )
    for key, applied in webhook.applied.items():
        if applied > 1:
            verdict.note(double, NOTIFICATIONS, f"webhook applied {key} {applied} times")
        if key not in workload.notifications:
            verdict.note(double, NOTIFICATIONS, f"webhook applied {key}, not a valid notification")
    # every valid event completed in the inbox, its effect present
    for event in workload.events.values():
        if event.poison:
            verdict.poison_sent[event.workload] += 1
            if status(event) != "FAILED":  # best effort once the DLQ has it: reported only
                verdict.poison_not_marked_failed[event.workload] += 1
            continue
        if status(event) != "COMPLETED" or event.event_id in effect_missing:
            verdict.note(
                lost,
                event.workload,
                f"{event.event_id}: inbox {status(event)}, effect missing: {event.event_id in effect_missing}",
            )
    # dead-letter queues
    for name, url in dlq_urls.items():
        keys = drain(sqs, url)
        verdict.dlq_messages[name] = len(keys)
        verdict.dead_lettered[name] = len(set(keys))
        if set(keys) != workload.poison[name]:
            verdict.problems.append(
                f"{name}: DLQ keys differ from the poison sent "
                f"({len(set(keys) - workload.poison[name])} extra, {len(workload.poison[name] - set(keys))} missing)"
            )
    return verdict


# ------------------------------------------------------------------------------------ the run


@dataclass
class ChaosResult:
    config: ChaosConfig
    workload: Workload
    stats: Stats
    verdict: Verdict
    seconds: float
    cpu_seconds: float
    redelivered: Counter[str]

    @property
    def lost(self) -> int:
        return sum(self.verdict.lost.values())

    @property
    def double_applied(self) -> int:
        return sum(self.verdict.double_applied.values())

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.double_applied == 0 and not self.verdict.problems

    def summary(self) -> str:
        return render(self)


def run_chaos(config: ChaosConfig, dynamodb_endpoint: str, sqs_endpoint: str) -> ChaosResult:
    """One chaos run against running DynamoDB Local and SQS (moto server) endpoints."""
    workload = build_workload(config)
    admin = boto3.client("dynamodb", endpoint_url=dynamodb_endpoint, region_name="us-east-1")
    sqs = boto3.client("sqs", endpoint_url=sqs_endpoint, region_name="us-east-1")
    suffix = uuid.uuid4().hex[:10]
    inbox_table, domain_table = f"chaos-inbox-{suffix}", f"chaos-domain-{suffix}"
    create_inbox_table(admin, inbox_table)
    create_domain_table(admin, domain_table)
    dlq_urls = {
        w: sqs.create_queue(QueueName=f"chaos-{w}-dlq-{suffix}")["QueueUrl"] for w in WORKLOADS
    }
    webhook = WebhookReceiver(config.webhook_error_rate, config.seed)
    try:
        seed_stock(admin, domain_table, workload.stock)
        with running_webhook(webhook), open(os.devnull, "w") as null:
            common = {
                **POWERTOOLS_ENV,
                "INBOX_TABLE": inbox_table,
                "DOMAIN_TABLE": domain_table,
                "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint,
                "AWS_ENDPOINT_URL_SQS": sqs_endpoint,
                "NOTIFY_WEBHOOK_URL": webhook.url,
                "NOTIFY_LEASE_SECONDS": str(config.lease_seconds),
                # Chaos must not exhaust a message's leased attempts (that would dead-letter a
                # valid notification): every retry here is made by the chaos itself.
                "NOTIFY_MAX_ATTEMPTS": "1000",
            }
            containers = []
            # Clients read their endpoints when they are created: build everything inside.
            with patched_environ(common), contextlib.redirect_stdout(null):
                for index in range(config.consumers):
                    modules = {}
                    for name in WORKLOADS:
                        with patched_environ({"DEAD_LETTER_QUEUE_URL": dlq_urls[name]}):
                            modules[name] = load_function(FUNCTIONS[name])
                    containers.append(Container(index, modules, config))
            source = EventSource(workload.stream, config)
            threads = [
                threading.Thread(target=consume, args=(c, source), name=f"chaos-consumer-{c.index}")
                for c in containers
            ]
            started = time.perf_counter()
            cpu_started = time.process_time()
            with contextlib.redirect_stdout(null):
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            seconds = time.perf_counter() - started
            cpu_seconds = time.process_time() - cpu_started
        stats = Stats()
        for container in containers:
            stats.merge(container.stats)
        verdict = verify(workload, admin, inbox_table, domain_table, sqs, dlq_urls, webhook)
        return ChaosResult(
            config, workload, stats, verdict, seconds, cpu_seconds, source.redelivered
        )
    finally:
        for table in (inbox_table, domain_table):
            delete_table(admin, table)
        for url in dlq_urls.values():
            with contextlib.suppress(Exception):
                sqs.delete_queue(QueueUrl=url)


def render(result: ChaosResult) -> str:
    config, stats, verdict, workload = result.config, result.stats, result.verdict, result.workload
    deliveries = sum(stats.deliveries.values())
    stream = len(workload.stream)
    dups = sum(workload.stream_duplicates.values())
    same = sum(workload.same_id_duplicates.values())
    lines = [
        f"chaos: seed {config.seed}, {config.consumers} consumers, DynamoDB Local",
        f"stream: {stream:,} deliveries of {len(workload.events):,} distinct events; "
        f"duplicates {dups:,} ({100 * dups / stream:.1f}%: {same:,} same transport id, "
        f"{dups - same:,} new); logical duplicates and poison included",
        f"handled: {deliveries:,} deliveries in {sum(stats.invocations.values()):,} invocations "
        f"({deliveries - stream:,} redeliveries after reported failures, crashes and lost responses)",
        "crashes: "
        + ", ".join(f"{kind} {stats.crashes[kind]}" for kind in CRASH_KINDS)
        + f" (total {sum(stats.crashes.values())})",
        "throttles injected: "
        + ", ".join(f"{code} {stats.throttles[code]}" for code in THROTTLE_CODES),
        f"cancelled transactions: {stats.cancelled_transactions} (reasons: "
        + ", ".join(f"{code} {n}" for code, n in sorted(stats.reasons.items()))
        + ")",
        f"transaction conflicts: {stats.conflict_transactions} transactions cancelled by "
        f"TransactionConflict, {stats.injected_conflicts} of them injected, "
        f"{stats.conflict_transactions - stats.injected_conflicts} real (concurrent consumers)",
        f"webhook: {verdict.webhook_calls} calls, {verdict.webhook_keys_called_again} keys called "
        "more than once (absorbed by Idempotency-Key)",
        f"lost: {result.lost}",
        f"double-applied: {result.double_applied}",
        "dead-lettered (distinct keys / poison sent / DLQ messages): "
        + ", ".join(
            f"{w} {verdict.dead_lettered[w]}/{verdict.poison_sent[w]}/{verdict.dlq_messages[w]}"
            for w in WORKLOADS
        ),
        f"wall time: {result.seconds:.1f} s, {deliveries / result.seconds:,.0f} deliveries/s "
        f"(CPU of the consumers' process, webhook and moto server included: {result.cpu_seconds:.1f} s)",
        "",
        "| workload | distinct events | deliveries | invocations | batch ms median (p90) "
        "| requests / delivery | requests / event | WCU / event | of which cancelled "
        "| RCU / event | requests by operation |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for w in WORKLOADS:
        events = sum(1 for e in workload.events.values() if e.workload == w)
        requests = sum(n for (wl, _), n in stats.requests.items() if wl == w)
        ops = ", ".join(f"{op} {n}" for (wl, op), n in sorted(stats.requests.items()) if wl == w)
        times = sorted(stats.batch_seconds[w]) or [0.0]
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        wcu = stats.wcu[w] + stats.wcu_cancelled[w]
        lines.append(
            f"| {w} | {events:,} | {stats.deliveries[w]:,} | {stats.invocations[w]:,} "
            f"| {1000 * statistics.median(times):.0f} ({1000 * p90:.0f}) "
            f"| {requests / max(1, stats.deliveries[w]):.2f} | {requests / max(1, events):.2f} "
            f"| {wcu / max(1, events):.2f} | {stats.wcu_cancelled[w] / max(1, events):.2f} "
            f"| {stats.rcu_halves[w] / 2 / max(1, events):.2f} | {ops} |"
        )
    lines.append(
        "WCU computed as in docs/PERFORMANCE.md (2 per KB per transaction action, 1 per KB per "
        "standard write, also when its condition fails); cancelled transactions counted at full "
        "cost (upper bound); throttled sends cost nothing. Per event = per distinct event_id."
    )
    if verdict.problems:
        lines.append("problems:")
        lines.extend(f"  {problem}" for problem in verdict.problems)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    defaults = ChaosConfig()
    parser.add_argument("--deliveries", type=int, default=defaults.deliveries)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--consumers", type=int, default=defaults.consumers)
    parser.add_argument("--duplicates", type=float, default=defaults.duplicates)
    parser.add_argument("--crash-rate", type=float, default=defaults.crash_rate)
    parser.add_argument("--throttle-rate", type=float, default=defaults.throttle_rate)
    args = parser.parse_args()
    config = ChaosConfig(
        deliveries=args.deliveries,
        seed=args.seed,
        consumers=args.consumers,
        duplicates=args.duplicates,
        crash_rate=args.crash_rate,
        throttle_rate=args.throttle_rate,
    )
    from moto.server import ThreadedMotoServer

    from lambda_inbox_tools.services.dynamodb_local import dynamodb_local_or_exit
    from lambda_inbox_tools.services.offline import use_offline_aws

    use_offline_aws(**POWERTOOLS_ENV)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto server's request log
    # Metrics are disabled; Powertools still warns when 8 containers share its metric set.
    warnings.filterwarnings("ignore", message="Dimension .* has already been added")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        with dynamodb_local_or_exit() as endpoint:
            result = run_chaos(config, endpoint, f"http://{host}:{port}")
    finally:
        server.stop()
    print(
        f"command: .venv/bin/python benchmarks/chaos.py --deliveries {config.deliveries} --seed {config.seed}"
    )
    print(result.summary())
    sys.exit(0 if result.ok else 1)


if __name__ == "__main__":
    main()
