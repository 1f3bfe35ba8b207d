"""The demo workload of `lambda-inbox local` for this repository's template: producers, faults,
the fix.

- orders on the order queue: producer retries (same event, new message ID), logical duplicates
  (a new event_id for an order already placed), an order beyond the stock, poison;
- payments on the Kafka topic in JSON, Avro and Protobuf (the Confluent wire format): producer
  retries (the same record again at a new offset), a replay of the first records, poison (a
  value that does not decode among it);
- notifications on the notification queue, posted to a webhook receiver on 127.0.0.1 that counts
  calls per Idempotency-Key; it fails some first calls (HTTP 500: transient) and refuses one
  template (HTTP 422: poison) until the "fix";
- crashes injected in-process before and after a commit (the invocation dies; the batch comes
  back);
- a stuck lease: a notification claimed an hour ago by a delivery that died, reaped by the
  scheduled reaper and dead-lettered;
- at the end, the fix: the webhook accepts the refused template and every dead-letter queue is
  redriven to its source with `lambda-inbox redrive`.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from lambda_inbox_tools.local.invoker import InProcessInvoker
from lambda_inbox_tools.local.stack import LocalStack
from lambda_inbox_tools.local.template import KafkaEventSpec
from lambda_inbox_tools.redrive import Mover

from .crashes import Crashes, CrashPlan
from .payments import payment_encoder
from .webhook import REFUSED_TEMPLATE, WebhookReceiver

SKUS = ("SKU-RED-MUG", "SKU-BLUE-CAP", "SKU-GREEN-PEN")
INITIAL_STOCK = 100


@dataclass
class Published:
    """What the producers sent: every message, and the distinct events behind them."""

    messages: Counter[str] = field(default_factory=Counter)
    duplicates: Counter[str] = field(default_factory=Counter)
    poison: Counter[str] = field(default_factory=Counter)
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)  # event_id -> body
    payments: dict[str, dict[str, Any]] = field(default_factory=dict)
    notifications: dict[str, dict[str, Any]] = field(default_factory=dict)
    kafka_replayed: int = 0


class Workload:
    def __init__(self, local: LocalStack, *, messages: int, seed: int) -> None:
        self.local = local
        self.messages = messages
        # A reproducible demo workload (B311).
        self.random = random.Random(seed)  # nosec B311
        self.published = Published()
        orders_queue = next(
            p.queue for p in local.sqs_pollers if p.function.logical_id == "OrderEventsFunction"
        )
        self.order_queue = orders_queue.url
        self.notification_queue = next(
            p.queue.url
            for p in local.sqs_pollers
            if p.function.logical_id == "CustomerNotificationsFunction"
        )
        kafka = [
            (f, e) for f in local.stack.functions for e in f.events if isinstance(e, KafkaEventSpec)
        ]
        self.topic = kafka[0][1].topics[0] if kafka else None
        self.payment_schemas = kafka[0][0].code_uri / "schemas" if kafka else None
        count = max(4, messages // 2)
        self.notification_ids = [f"evt-ntf-{n:04d}" for n in range(count)]
        transient = {k for n, k in enumerate(self.notification_ids) if n % 4 == 1}
        self.webhook = WebhookReceiver(transient)
        self.redriven: dict[str, int] = {}
        self.crashes: Crashes | None = None

    def inject_crashes(self) -> None:
        """In-process only: a crash before a commit and after one in each SQS consumer and in the
        Kafka consumer, and in the outbox relay after a send (the invocation dies; its batch
        comes back)."""
        if not isinstance(self.local.invoker, InProcessInvoker):
            return
        self.crashes = Crashes(
            [
                CrashPlan("OrderEventsFunction", 2, "before"),
                CrashPlan("OrderEventsFunction", 4, "after"),
                CrashPlan("PaymentEventsFunction", 1, "after"),
                # The relay sent its batch and dies before acknowledging the stream records:
                # the batch is sent again, and customer-notifications' inbox absorbs it.
                CrashPlan("OutboxRelayFunction", 2, "after", "sns.PublishBatch"),
            ]
        )
        self.crashes.install(self.local.invoker)

    # -- setup
    def seed_stock(self) -> None:
        table = self.local.stack.table("DomainTable").name
        for sku in SKUS:
            self.local.dynamodb.put_item(
                TableName=table,
                Item={
                    "pk": {"S": f"SKU#{sku}"},
                    "sk": {"S": "STOCK"},
                    "available": {"N": str(INITIAL_STOCK)},
                    "reserved": {"N": "0"},
                },
            )

    # -- orders
    def _send(self, queue: str, body: str, kind: str, *, duplicate: bool = False) -> None:
        self.local.sqs.send_message(QueueUrl=queue, MessageBody=body)
        self.published.messages[kind] += 1
        if duplicate:
            self.published.duplicates[kind] += 1

    def publish_orders(self) -> None:
        sent: list[str] = []
        for n in range(self.messages):
            order: dict[str, Any] = {
                "event_id": f"evt-ord-{n:04d}",
                "order_id": f"ord-{n:04d}",
                "customer_id": f"cust-{n % 7:03d}",
                "lines": [{"sku": self.random.choice(SKUS), "qty": self.random.randint(1, 3)}],
                "total_cents": 1000 + n,
            }
            if n == 3:
                order["lines"] = [{"sku": SKUS[0], "qty": 1000}]  # beyond the stock
            body = json.dumps(order)
            self.published.orders[order["event_id"]] = order
            self._send(self.order_queue, body, "orders")
            sent.append(body)
            if self.random.random() < 0.15:  # producer retry: same event, new message
                self._send(self.order_queue, body, "orders", duplicate=True)
        for n in (0, 5):  # logical duplicates: a new event for an order already placed
            if n < len(sent):
                again = json.loads(sent[n]) | {"event_id": f"evt-ord-again-{n:04d}"}
                self.published.orders[again["event_id"]] = again
                self._send(self.order_queue, json.dumps(again), "orders", duplicate=True)
        for body in ("{not json", json.dumps({"event_id": "evt-ord-bad", "order_id": "x"})):
            self._send(self.order_queue, body, "orders")
            self.published.poison["orders"] += 1

    # -- payments
    def publish_payments(self) -> None:
        if self.topic is None:
            return
        from confluent_kafka import Producer

        topic = self.topic
        producer = Producer({"bootstrap.servers": self.local.endpoints.kafka_bootstrap})
        encode = payment_encoder(self.payment_schemas)
        records: list[tuple[bytes, bytes]] = []

        def produce(key: bytes, value: bytes, *, duplicate: bool = False) -> None:
            producer.produce(topic, key=key, value=value)
            self.published.messages["payments"] += 1
            if duplicate:
                self.published.duplicates["payments"] += 1

        for n in range(self.messages):
            payment: dict[str, Any] = {
                "event_id": f"evt-pay-{n:04d}",
                "payment_id": f"pay-{n:04d}",
                "order_id": f"ord-{n:04d}",
                "customer_id": f"cust-{n % 7:03d}",
                "amount_cents": 500 + 10 * n,
            }
            self.published.payments[payment["event_id"]] = payment
            record = (payment["customer_id"].encode(), encode(n, payment))
            records.append(record)
            produce(*record)
            if self.random.random() < 0.15:
                produce(*record, duplicate=True)
        produce(b"cust-bad", b"\xff\xfe not utf-8")
        produce(b"cust-bad", json.dumps({"event_id": "evt-pay-bad", "amount_cents": 0}).encode())
        produce(b"cust-bad", b"\x00\x00\x00\x00\x01\x0a\xff")  # framed Avro that does not decode
        self.published.poison["payments"] += 3
        producer.flush(10)
        time.sleep(1.0)
        for record in records[: max(1, len(records) // 4)]:  # a replay of the first records
            produce(*record, duplicate=True)
            self.published.kafka_replayed += 1
        producer.flush(10)

    # -- notifications
    def publish_notifications(self) -> None:
        for n, event_id in enumerate(self.notification_ids):
            notification = {
                "event_id": event_id,
                "customer_id": f"cust-{n % 7:03d}",
                "order_id": f"ord-{n:04d}",
                "template": REFUSED_TEMPLATE if n % 6 == 2 else "order-shipped",
            }
            self.published.notifications[event_id] = notification
            body = json.dumps(notification)
            self._send(self.notification_queue, body, "notifications")
            if n % 5 == 0:
                self._send(self.notification_queue, body, "notifications", duplicate=True)
        self._send(self.notification_queue, json.dumps({"event_id": ""}), "notifications")
        self.published.poison["notifications"] += 1

    def stuck_lease(self) -> None:
        """A delivery claimed a notification an hour ago, then died; the message never returns."""
        from devkit.leases import crashed_claim
        from lambda_inbox import InboundMessage, KeyStrategy

        notification = {
            "event_id": "evt-ntf-stuck",
            "customer_id": "cust-000",
            "order_id": "ord-0000",
            "template": "order-shipped",
        }
        self.published.notifications[notification["event_id"]] = notification
        message = InboundMessage(
            "m-stuck", "m-stuck", json.dumps(notification).encode(), "arn:local:notifications", 0
        )
        crashed_claim(
            self.local.dynamodb,
            table=self.local.stack.table("InboxTable").name,
            consumer="customer-notifications",
            message=message,
            keys=KeyStrategy.from_body("event_id"),
            claimed_at=time.time() - 3600,
        )

    def publish(self) -> None:
        self.seed_stock()
        self.stuck_lease()
        threads = [
            threading.Thread(target=target, daemon=True)
            for target in (self.publish_orders, self.publish_payments, self.publish_notifications)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    # -- the fix
    def fix_and_redrive(self) -> None:
        """The webhook accepts the refused template; every DLQ goes back to its source."""
        self.webhook.refuse_template = False
        for dlq, source in self.local.stack.redrive_pairs():
            before = self.local.queue_depth(dlq.url)
            if before == 0:
                continue
            # Poison comes straight back to the DLQ: move each message once.
            Mover(self.local.sqs, dlq.url, source.url, limit=before).run()
            self.redriven[dlq.name] = before
