"""A Hypothesis state machine against a reference model of the effects (DynamoDB Local).

Its job is what needs the real engine: crashes around the commit with `ClientRequestToken`
honoured, and leases claimed, expired and taken over while a webhook call is in flight, checked
by their effects (each exactly once). What each record's outcome is, on every source, against
the documented rules, is tests/unit/fates/test_batch_semantics.py's job (in memory, many more
examples).

Rules produce payments (MSK records, transactional) and notifications (SQS, leased mode, a webhook
on 127.0.0.1), let the broker hand out copies (same or new transport id), deliver batches in any
order with a crash armed at one point (before / after the `TransactWriteItems`, before / after
the lease claim, the batch response lost, or another container taking the lease over while the
webhook call is in flight), and move the lease clock. The reference model is the set of distinct
events and what each must have done.

- After every step: no effect applied twice (balances never above the distinct payments, always
  equal to the PAYMENT items; one NOTIFICATION item per event at most, and only with the webhook
  applied).
- At teardown: everything pending is redelivered (leases expired) until acknowledged; then every
  event's effect is there exactly once.

The suite runs 10 examples of up to 15 steps (about a minute on a shared 2-core machine). Run it
longer with `CHAOS_STATEFUL_EXAMPLES=500 CHAOS_STATEFUL_STEPS=50 .venv/bin/pytest -s
tests/integration/test_stateful_model.py` (add `--hypothesis-seed=N` to replay a run).
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from devkit.chaos import (
    PAYMENTS,
    Crash,
    Delivery,
    WebhookReceiver,
    kafka_record,
    running_webhook,
    scan,
    sqs_record,
)
from devkit.handlers import load_function
from devkit.tables import LocalTables
from lambda_inbox import Clients, InboxConsumer, Leased

pytestmark = pytest.mark.integration

NOTIFICATIONS = "notifications"
EXAMPLES = int(os.environ.get("CHAOS_STATEFUL_EXAMPLES", "10"))
STEPS = int(os.environ.get("CHAOS_STATEFUL_STEPS", "15"))
LEASE_SECONDS = 60.0
CRASHES = (
    "none",
    "before TransactWriteItems",
    "after TransactWriteItems",
    "before lease claim",
    "after lease claim",
    "response lost",
    "takeover during the webhook call",
)


class Clock:
    """The leases' clock: real time plus an offset the machine moves forward."""

    def __init__(self) -> None:
        import time

        self._time = time.time
        self.offset = 0.0

    def __call__(self) -> float:
        return self._time() + self.offset


@dataclass
class Stack:
    tables: LocalTables
    webhook: WebhookReceiver
    clock: Clock
    payments: ModuleType
    notifications: ModuleType
    #: a second notifications container, for takeovers
    rival: ModuleType
    armed: list[str]


def _arm(stack: Stack, module: ModuleType) -> None:
    """Hooks that raise `Crash` at the armed point (once), on the module's own client."""
    events = module.consumer.dynamodb.meta.events

    def fire(point: str) -> None:
        if stack.armed and stack.armed[0] == point:
            stack.armed.clear()
            raise Crash(point)

    def claim(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["claim"] = params.get("Item", {}).get("status") == {"S": "IN_PROGRESS"}

    def before_put(context: dict[str, Any], **_: Any) -> None:
        if context.get("claim"):
            fire("before lease claim")

    def after_put(http_response: Any, context: dict[str, Any], **_: Any) -> None:
        if context.get("claim") and http_response.status_code == 200:
            fire("after lease claim")

    def after_transaction(http_response: Any, **_: Any) -> None:
        if http_response.status_code == 200:
            fire("after TransactWriteItems")

    events.register("before-parameter-build.dynamodb.PutItem", claim)
    events.register("before-call.dynamodb.PutItem", before_put)
    events.register("after-call.dynamodb.PutItem", after_put)
    events.register(
        "before-send.dynamodb.TransactWriteItems", lambda **_: fire("before TransactWriteItems")
    )
    events.register("after-call.dynamodb.TransactWriteItems", after_transaction)
    if module.consumer.config.consumer == "customer-notifications":
        # The same consumer as the function's, on the simulation's clock.
        module.__dict__["consumer"] = InboxConsumer(
            "customer-notifications",
            model=module.CustomerNotification,
            decide=module.record_notification,
            key="event_id",
            leased=Leased(module.post_webhook, lease=module.LEASE),
            clients=Clients(dynamodb=module.consumer.dynamodb),
            config=module.consumer.config.replace(clock=stack.clock),
        )


@pytest.fixture(scope="module")
def stack(dynamodb_local_endpoint: str) -> Iterator[Stack]:
    from devkit.tables import create_domain_table, create_inbox_table, delete_table
    from lambda_inbox_tools.services.offline import local_client

    client = local_client("dynamodb", dynamodb_local_endpoint)
    suffix = uuid.uuid4().hex[:10]
    tables = LocalTables(
        dynamodb_local_endpoint, f"sm-inbox-{suffix}", f"sm-domain-{suffix}", client
    )
    create_inbox_table(client, tables.inbox)
    create_domain_table(client, tables.domain)
    webhook = WebhookReceiver(error_rate=0.0, seed=0)
    with running_webhook(webhook), pytest.MonkeyPatch.context() as mp:
        mp.setenv("INBOX_TABLE", tables.inbox)
        mp.setenv("DOMAIN_TABLE", tables.domain)
        mp.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_local_endpoint)
        mp.delenv("DEAD_LETTER_QUEUE_URL", raising=False)
        mp.setenv("NOTIFY_WEBHOOK_URL", webhook.url)
        mp.setenv("NOTIFY_LEASE_SECONDS", str(LEASE_SECONDS))
        mp.setenv("NOTIFY_MAX_ATTEMPTS", "1000")
        mp.setenv("POWERTOOLS_LOG_LEVEL", "CRITICAL")
        mp.setenv("POWERTOOLS_METRICS_DISABLED", "true")
        result = Stack(
            tables,
            webhook,
            Clock(),
            load_function("payment_events"),
            load_function("customer_notifications"),
            load_function("customer_notifications"),
            [],
        )
        for module in (result.payments, result.notifications, result.rival):
            _arm(result, module)
        try:
            yield result  # inside: the webhook serves while the stack is in use
        finally:
            for name in (tables.inbox, tables.domain):
                delete_table(client, name)


class InboxModel(RuleBasedStateMachine):
    """One example: its own prefix for ids, so examples share the tables without meeting."""

    stack: Stack

    events = Bundle("events")

    def __init__(self) -> None:
        super().__init__()
        self.prefix = uuid.uuid4().hex[:8]
        self.bodies: dict[str, dict[str, Any]] = {}
        self.kinds: dict[str, str] = {}
        self.transports: dict[str, list[Delivery]] = {}
        self.pending: list[Delivery] = []
        #: reference model: payment_id -> (customer, amount); notification event ids
        self.payments: dict[str, tuple[str, int]] = {}
        self.notifications: set[str] = set()
        self.offset = 0

    # ---- the broker ----------------------------------------------------------------------

    def _transport(self, event_id: str) -> Delivery:
        body = self.bodies[event_id]
        if self.kinds[event_id] == PAYMENTS:
            self.offset += 1
            record = kafka_record(body, 0, self.offset, str(body["customer_id"]))
            delivery = Delivery(PAYMENTS, event_id, f"payments-0:{self.offset}", record)
        else:
            message_id = str(uuid.uuid4())
            record = sqs_record(NOTIFICATIONS, body, message_id)
            delivery = Delivery(NOTIFICATIONS, event_id, message_id, record)
        self.transports.setdefault(event_id, []).append(delivery)
        return delivery

    @rule(
        target=events,
        customer=st.sampled_from(["a", "b"]),
        amount=st.integers(1, 500),
        logical=st.booleans(),
    )
    def produce_payment(self, customer: str, amount: int, logical: bool) -> str:
        event_id = f"{self.prefix}-evt-{len(self.bodies)}"
        if logical and self.payments:  # a new event_id for a payment already produced
            payment_id = sorted(self.payments)[0]
            customer, amount = self.payments[payment_id]
        else:
            payment_id = f"{self.prefix}-pay-{len(self.bodies)}"
            self.payments[payment_id] = (customer, amount)
        self.bodies[event_id] = {
            "event_id": event_id,
            "payment_id": payment_id,
            "order_id": f"{self.prefix}-ord",
            "customer_id": f"{self.prefix}-{customer}",
            "amount_cents": amount,
        }
        self.kinds[event_id] = PAYMENTS
        self.pending.append(self._transport(event_id))
        return event_id

    @rule(target=events, customer=st.sampled_from(["a", "b"]))
    def produce_notification(self, customer: str) -> str:
        event_id = f"{self.prefix}-evt-{len(self.bodies)}"
        self.bodies[event_id] = {
            "event_id": event_id,
            "customer_id": f"{self.prefix}-{customer}",
            "order_id": f"{self.prefix}-ord",
            "template": "order-shipped",
        }
        self.kinds[event_id] = NOTIFICATIONS
        self.notifications.add(event_id)
        self.pending.append(self._transport(event_id))
        return event_id

    @rule(event_id=events, new_id=st.booleans())
    def broker_copy(self, event_id: str, new_id: bool) -> None:
        """At-least-once delivery (same transport id) or a producer retry (new id)."""
        self.pending.append(self._transport(event_id) if new_id else self.transports[event_id][0])

    @rule(
        picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=6),
        crash=st.sampled_from(CRASHES),
    )
    def deliver(self, picks: list[int], crash: str) -> None:
        if not self.pending:
            return
        chosen: list[Delivery] = []
        seen: set[str] = set()
        for pick in picks:
            delivery = self.pending[pick % len(self.pending)]
            if delivery.transport_id not in seen:
                seen.add(delivery.transport_id)
                chosen.append(delivery)
        for kind in (PAYMENTS, NOTIFICATIONS):
            batch = [d for d in chosen if d.workload == kind]
            if batch:
                self._invoke(kind, batch, crash)

    @rule(seconds=st.sampled_from([1.0, 30.0, LEASE_SECONDS + 1]))
    def advance_clock(self, seconds: float) -> None:
        self.stack.clock.offset += seconds

    def _invoke(self, kind: str, batch: list[Delivery], crash: str) -> None:
        stack = self.stack
        module = stack.payments if kind == PAYMENTS else stack.notifications
        if kind == PAYMENTS:
            event: dict[str, Any] = {
                "eventSource": "aws:kafka",
                "records": {
                    "payments-0": sorted((d.record for d in batch), key=lambda r: r["offset"])
                },
            }
        else:
            event = {"Records": [d.record for d in batch]}
        stack.armed[:] = [crash] if crash not in ("none", "response lost") else []
        if crash == "takeover during the webhook call" and kind == NOTIFICATIONS:
            stack.armed.clear()
            stack.webhook.during_call = lambda key: self._takeover(key, batch)
        try:
            response = module.handler(event, None)
        except Crash:
            return  # everything in the batch stays pending
        finally:
            stack.armed.clear()
            stack.webhook.during_call = None
        if crash == "response lost":
            return
        failed = set()
        for failure in response["batchItemFailures"]:
            ident = failure["itemIdentifier"]
            failed.add(
                f"{ident['topic-partition']}:{ident['offset']}" if kind == PAYMENTS else ident
            )
        acked = {d.transport_id for d in batch} - failed
        self.pending = [d for d in self.pending if d.transport_id not in acked]

    def _takeover(self, key: str, batch: list[Delivery]) -> None:
        """While the first container's webhook call is in flight, its lease expires and a rival
        container delivers the same message: it claims, calls the webhook, and commits."""
        stack = self.stack
        stack.webhook.during_call = None
        stack.clock.offset += LEASE_SECONDS + 1
        delivery = next(d for d in batch if d.event_id == key)
        stack.rival.handler({"Records": [delivery.record]}, None)

    # ---- the reference model -------------------------------------------------------------

    def _observed(self) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[int, int]], set[str]]:
        payments: dict[str, dict[str, Any]] = {}
        balances: dict[str, tuple[int, int]] = {}
        notes: set[str] = set()
        client = self.stack.tables.client
        for item in scan(client, self.stack.tables.domain):
            pk, sk = str(item["pk"]), str(item["sk"])
            if not pk.startswith(f"CUSTOMER#{self.prefix}-"):
                continue
            if sk.startswith("PAYMENT#"):
                payments[sk.removeprefix("PAYMENT#")] = item
            elif sk == "BALANCE":
                balances[pk] = (int(item["balance_cents"]), int(item["payments"]))
            elif sk.startswith("NOTIFICATION#"):
                notes.add(sk.removeprefix("NOTIFICATION#"))
        return payments, balances, notes

    @invariant()
    def no_effect_applied_twice(self) -> None:
        payments, balances, notes = self._observed()
        assert set(payments) <= set(self.payments)
        from_items: Counter[str] = Counter()
        counts: Counter[str] = Counter()
        for payment_id, item in payments.items():
            customer, amount = self.payments[payment_id]
            assert int(item["amount_cents"]) == amount
            from_items[f"CUSTOMER#{self.prefix}-{customer}"] += amount
            counts[f"CUSTOMER#{self.prefix}-{customer}"] += 1
        for pk, (cents, count) in balances.items():
            assert (cents, count) == (from_items[pk], counts[pk]), "balance != its PAYMENT items"
        assert notes <= self.notifications
        for event_id in notes:
            assert self.stack.webhook.applied[event_id] == 1, "recorded without the webhook"
        for event_id in self.notifications:
            assert self.stack.webhook.applied[event_id] <= 1

    def teardown(self) -> None:
        rounds = 0
        while self.pending:
            rounds += 1
            assert rounds <= 10, f"still pending after {rounds} rounds: {self.pending[:3]}"
            self.stack.clock.offset += LEASE_SECONDS + 1  # every lease left behind expires
            for kind in (PAYMENTS, NOTIFICATIONS):
                batch = list(
                    {d.transport_id: d for d in self.pending if d.workload == kind}.values()
                )
                for start in range(0, len(batch), 10):
                    self._invoke(kind, batch[start : start + 10], "none")
        payments, balances, notes = self._observed()
        assert set(payments) == set(self.payments), "a payment's effect is missing"
        expected: Counter[str] = Counter()
        counts: Counter[str] = Counter()
        for customer, amount in self.payments.values():
            expected[f"CUSTOMER#{self.prefix}-{customer}"] += amount
            counts[f"CUSTOMER#{self.prefix}-{customer}"] += 1
        assert balances == {pk: (expected[pk], counts[pk]) for pk in expected}
        assert notes == self.notifications, "a notification's effect is missing"
        for event_id in self.notifications:
            assert self.stack.webhook.applied[event_id] == 1
        self.no_effect_applied_twice()


def test_effects_match_the_reference_model(stack: Stack) -> None:
    InboxModel.stack = stack
    machine = InboxModel.TestCase
    machine.settings = settings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    machine().runTest()
    webhook = stack.webhook
    print(
        f"webhook: {sum(webhook.calls.values())} calls, {len(webhook.applied)} keys applied, "
        f"{webhook.absorbed} repeated calls absorbed by Idempotency-Key"
    )
