"""The chaos workload: the distinct events of the three consumers, the stream of deliveries
(duplicates with the same or a new transport id), and what the tables must show."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
    "before a DLQ send",
    "after a DLQ send",
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
    #: the lost response, unless `lost_response_rate` says otherwise).
    crash_rate: float = 0.01
    #: Probability that an invocation's batch response is lost (None: `crash_rate`). Rolled once
    #: per invocation, not per call, so a short run meets this crash point least often.
    lost_response_rate: float | None = None
    #: Probability that an HTTP send to DynamoDB is answered with throttling instead.
    throttle_rate: float = 0.003
    #: Probability that a TransactWriteItems send is answered with a TransactionConflict
    #: cancellation instead (on top of the real conflicts between concurrent consumers).
    conflict_rate: float = 0.005
    webhook_error_rate: float = 0.02
    #: Probability that the outbox relay dies after a send and before acknowledging the batch.
    relay_crash_rate: float = 0.05
    #: Where the relay sends the notifications: "sqs" (the queue itself) or "sns" (a topic whose
    #: subscription delivers to the queue, as template.yaml does).
    relay_via: str = "sqs"
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
    #: `INBOX_DUPLICATE_READ` of the SQS and Kafka consumers: "auto" reads a batch's inbox keys
    #: first only when something suggests a duplicate; "never" sends every batch without poison
    #: straight to its transaction, so the commit finds every duplicate (leased mode always
    #: reads first).
    duplicate_read: str = "auto"


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
