"""What each function's sample events must leave in the tables, queues and webhook: the
example application's invariants (`devkit.demo.invariants`), with the exact
expectation that in-order delivery allows, and each function's seed."""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from devkit.demo.invariants import (
    DomainState,
    OrderExpectation,
    PaymentExpectation,
)
from devkit.demo.invariants import (
    check_notifications as check_notifications_invariants,
)
from devkit.demo.invariants import check_orders as check_orders_invariants
from devkit.demo.invariants import check_payments as check_payments_invariants
from devkit.handlers import load_function
from devkit.leases import crashed_claim
from devkit.tables import seed_stock
from lambda_inbox import KeyStrategy
from lambda_inbox._errors import PoisonMessage
from lambda_inbox._messages import InboundMessage
from lambda_inbox._sources import detect
from lambda_inbox.store import InboxRecord, Status
from lambda_inbox.store._outbox_item import outbox_message_of
from lambda_inbox_tools.services.items import scan_items, scan_plain
from lambda_inbox_tools.services.offline import patched_environ
from lambda_inbox_tools.services.queues import queue_depth, receive_all

from .services import PhaseStack, WebhookReceiver
from .settings import SEEDED_STOCK, SamLocalError

# ---------------------------------------------------------------------------- table checks


@dataclass(frozen=True)
class CheckContext:
    function: str
    stack: PhaseStack
    events: list[Mapping[str, Any]]  # in invocation order
    dynamodb: Any
    sqs: Any
    webhook: WebhookReceiver
    responses: list[Any] = field(default_factory=list)  # the function's, in invocation order

    def table(self, variable: str) -> str:
        """The table the function's `variable` (e.g. `DOMAIN_TABLE`) names."""
        return self.stack.variable(self.function, variable)


@functools.cache
def function_module(code_dir: str) -> Any:
    """functions/<code_dir>/app.py, imported once. The module reads table names from its
    environment when imported: placeholders are set for the import only (credentials and region
    are the fake ones `main` set for this process)."""
    with patched_environ({"INBOX_TABLE": "unused", "DOMAIN_TABLE": "unused"}):
        return load_function(code_dir)


def function_payloads(
    code_dir: str, class_name: str, events: Iterable[Mapping[str, Any]]
) -> tuple[list[Any], int]:
    """The payloads of the events that functions/<code_dir>/app.py accepts, in delivery order,
    and how many records it rejects (poison): each record read by the function's own consumer
    (its sources: SQS envelopes, Kafka value formats) and validated by its model `class_name`."""
    module = function_module(code_dir)
    model = getattr(module, class_name)
    valid, poison = [], 0
    for event in events:
        for message in detect(event, module.consumer.sources).messages(event):
            try:
                valid.append(model.model_validate(message.json))
            except (ValueError, PoisonMessage):  # pydantic's ValidationError is a ValueError
                poison += 1
    return valid, poison


def check_dead_letters(context: CheckContext, poison: int) -> tuple[list[str], str]:
    """Every poison record was dead-lettered once."""
    url = context.stack.variables[context.function].get("DEAD_LETTER_QUEUE_URL")
    if url is None:
        return [], "no DEAD_LETTER_QUEUE_URL: dead letters not checked"
    depth = queue_depth(context.sqs, url)
    extra = context.stack.extra_dead_letters[url]
    expected = poison + extra
    reaped = f" + {extra} from the reaper" if extra else ""
    problems = []
    if depth != expected:
        problems.append(
            f"dead-letter queue holds {depth} messages, expected {expected} "
            f"({poison} poison record(s){reaped})"
        )
    return problems, (f"dead-letter queue: {depth} message(s) ({poison} poison{reaped})")


def seed_orders(context: CheckContext) -> None:
    """Stock for every SKU the order events name (`SEEDED_STOCK` each)."""
    orders, _ = function_payloads("order_events", "OrderPlaced", context.events)
    skus = sorted({line.sku for order in orders for line in order.lines})
    table = context.stack.variable(context.function, "DOMAIN_TABLE")
    seed_stock(context.dynamodb, table, dict.fromkeys(skus, SEEDED_STOCK))


def check_orders(context: CheckContext) -> list[str]:
    """order-events: replay the valid orders in delivery order against the seeded stock (a
    duplicate event_id or an order_id seen before changes nothing), then hold the domain table to
    the example application's invariants with that exact expectation: one SHIPMENT or REJECTION
    per order, as the replay says, and stock reserved exactly once."""
    orders, poison = function_payloads("order_events", "OrderPlaced", context.events)
    available: dict[str, int] = {line.sku: SEEDED_STOCK for order in orders for line in order.lines}
    expected: dict[str, OrderExpectation] = {}
    seen_events: set[str] = set()
    for order in orders:
        if order.event_id in seen_events or order.order_id in expected:
            continue
        seen_events.add(order.event_id)
        needed: dict[str, int] = order.quantities()
        kind = "REJECTION"
        if all(available.get(sku, 0) >= qty for sku, qty in needed.items()):
            for sku, qty in needed.items():
                available[sku] -= qty
            kind = "SHIPMENT"
        expected[order.order_id] = OrderExpectation(kind, needed, frozenset({order.event_id}))
    state = DomainState.read(scan_plain(context.dynamodb, context.table("DOMAIN_TABLE")))
    problems = check_orders_invariants(state, expected, dict.fromkeys(available, SEEDED_STOCK))
    dead_letter_problems, dead_letters = check_dead_letters(context, poison)
    fail_on("order-events tables", problems.all() + dead_letter_problems)
    kinds = Counter(order.kind for order in expected.values())
    rejected = sorted(order_id for order_id, o in expected.items() if o.kind == "REJECTION")
    return [
        f"orders: {kinds['SHIPMENT']} shipped, {kinds['REJECTION']} rejected "
        f"({', '.join(rejected) or 'none'}), one record per order",
        "stock (available/reserved, reserved exactly once): "
        + ", ".join(
            f"{sku} {state.stock[sku][0]}/{state.stock[sku][1]}" for sku in sorted(available)
        ),
        dead_letters,
    ]


def check_payments(context: CheckContext) -> list[str]:
    """payment-events: one PAYMENT item per distinct payment of the events (the first event_id
    wins; a duplicate event_id or a second event for a payment changes nothing), every
    customer's BALANCE the sum and count of its payments."""
    payments, poison = function_payloads("payment_events", "PaymentCaptured", context.events)
    expected: dict[str, PaymentExpectation] = {}
    seen_events: set[str] = set()
    for payment in payments:
        if payment.event_id in seen_events or payment.payment_id in expected:
            continue
        seen_events.add(payment.event_id)
        expected[payment.payment_id] = PaymentExpectation(
            payment.customer_id, payment.amount_cents, frozenset({payment.event_id})
        )
    state = DomainState.read(scan_plain(context.dynamodb, context.table("DOMAIN_TABLE")))
    problems = check_payments_invariants(state, expected)
    dead_letter_problems, dead_letters = check_dead_letters(context, poison)
    fail_on("payment-events tables", problems.all() + dead_letter_problems)
    return [
        f"payments: {len(state.payments)} recorded once each, {len(state.balances)} balances "
        "equal to the sum of their payments: "
        + ", ".join(f"{c} {cents}/{n}" for c, (cents, n) in sorted(state.balances.items())),
        dead_letters,
    ]


def check_notifications(context: CheckContext) -> list[str]:
    """customer-notifications (leased mode): for every distinct event_id of the valid
    notifications, one NOTIFICATION item (`SENT`, the first delivery's order and template) and
    exactly one webhook call carrying `Idempotency-Key: <event_id>` and the notification's body,
    whatever the duplicates in the batches; no call for poison, no call under any other key."""
    notifications, poison = function_payloads(
        "customer_notifications", "CustomerNotification", context.events
    )
    first: dict[str, Any] = {}
    for notification in notifications:
        first.setdefault(notification.event_id, notification)
    wanted = {
        event_id: {
            "pk": f"CUSTOMER#{n.customer_id}",
            "status": "SENT",
            "order_id": n.order_id,
            "template": n.template,
        }
        for event_id, n in first.items()
    }
    calls = context.webhook.calls()
    per_key = Counter(call.idempotency_key or "" for call in calls)
    state = DomainState.read(scan_plain(context.dynamodb, context.table("DOMAIN_TABLE")))
    problems = check_notifications_invariants(state, wanted, per_key).all()
    for call in calls:
        want = first.get(call.idempotency_key or "")
        if want is None:
            continue
        body = {"customer_id": want.customer_id, "order_id": want.order_id}
        body["template"] = want.template
        if call.body != body:
            problems.append(
                f"webhook call {call.idempotency_key}: body {call.body!r}, expected {body}"
            )
    dead_letter_problems, dead_letters = check_dead_letters(context, poison)
    fail_on("customer-notifications tables and webhook", problems + dead_letter_problems)
    return [
        f"notifications: {len(state.notifications)} NOTIFICATION item(s), one per event_id "
        f"({', '.join(sorted(state.notifications)) or 'none'})",
        f"webhook: {len(calls)} call(s) for {len(wanted)} event_id(s), each once with its "
        "event_id as Idempotency-Key",
        dead_letters,
    ]


def fail_on(what: str, problems: list[str]) -> None:
    if problems:
        raise SamLocalError(f"{what}:\n  " + "\n  ".join(problems))


#: The record the reaper's seed leaves behind: a notification claimed by a delivery that never
#: finished, its lease expired long ago (more than the grace), its message never coming back.
STUCK_CONSUMER = "customer-notifications"
STUCK_KEY = "evt-notify-0900"
STUCK_PAYLOAD = {
    "event_id": STUCK_KEY,
    "customer_id": "cust-009",
    "order_id": "ord-1900",
    "template": "order-shipped",
}


def _reaper_queue(context: CheckContext, consumer: str) -> str:
    queues = json.loads(context.stack.variable(context.function, "INBOX_REAPER_DLQ_URLS"))
    url = queues.get(consumer)
    if not isinstance(url, str) or not url:
        raise SamLocalError(f"INBOX_REAPER_DLQ_URLS has no queue for {consumer}: {queues}")
    return url


def seed_reaper(context: CheckContext) -> None:
    """One stuck `IN_PROGRESS` lease of customer-notifications, expired an hour more than the
    reaper's grace ago: the reaper must mark it FAILED and dead-letter it to that consumer's DLQ."""
    grace = float(
        context.stack.variables[context.function].get("INBOX_REAPER_LEASE_GRACE_SECONDS", "900")
    )
    expired = time.time() - grace - 3600
    body = json.dumps(STUCK_PAYLOAD, separators=(",", ":")).encode()
    message = InboundMessage(
        "00000000-0000-4000-8000-000000000900",
        "00000000-0000-4000-8000-000000000900",
        body,
        "arn:aws:sqs:us-east-1:123456789012:lambda-inbox-notifications",
        0,
    )
    table = context.stack.variable(context.function, "INBOX_TABLE")
    # A delivery claimed it, then never finished: its lease is claimed as leased mode claims it.
    crashed_claim(
        context.dynamodb,
        table=table,
        consumer=STUCK_CONSUMER,
        message=message,
        keys=KeyStrategy.from_body("event_id"),
        claimed_at=expired - 60,
    )
    context.stack.extra_dead_letters[_reaper_queue(context, STUCK_CONSUMER)] += 1


def check_reaper(context: CheckContext) -> list[str]:
    """inbox-reaper (docs/concepts.md, the reaper): every response is a JSON object with integer `reaped`,
    `dead_lettered` and `open`; over all runs the seeded stuck lease was reaped and dead-lettered
    exactly once (the first run; later runs find nothing to do); the record is FAILED
    `lease_expired` with `dead_lettered_at`; its payload is in the consumer's DLQ; and the last
    run's `open` equals the open records of the inbox table."""
    problems = []
    summaries = []
    for response in context.responses:
        fields = (
            {name: response.get(name) for name in ("reaped", "dead_lettered", "open")}
            if (isinstance(response, dict))
            else {}
        )
        if not fields or not all(
            isinstance(value, int) and not isinstance(value, bool) for value in fields.values()
        ):
            problems.append(f"response without integer reaped, dead_lettered, open: {response!r}")
            continue
        summaries.append(fields)
    if summaries:
        if summaries[0]["reaped"] != 1 or summaries[0]["dead_lettered"] != 1:
            problems.append(f"first run: expected reaped 1 and dead_lettered 1, got {summaries[0]}")
        for later in summaries[1:]:
            if later["reaped"] or later["dead_lettered"]:
                problems.append(f"a later run reaped or dead-lettered again: {later}")

    table = context.stack.variable(context.function, "INBOX_TABLE")
    records = [InboxRecord.from_item(item) for item in scan_items(context.dynamodb, table)]
    stuck = next(
        (r for r in records if (r.consumer, r.message_key) == (STUCK_CONSUMER, STUCK_KEY)), None
    )
    if stuck is None:
        problems.append(f"the seeded record {STUCK_CONSUMER}#{STUCK_KEY} is gone")
    elif (stuck.status, stuck.error_code) != (Status.FAILED, "lease_expired") or not (
        stuck.dead_lettered_at
    ):
        problems.append(
            f"{STUCK_CONSUMER}#{STUCK_KEY}: status {stuck.status.value}, error_code "
            f"{stuck.error_code}, dead_lettered_at {stuck.dead_lettered_at}; expected FAILED, "
            "lease_expired and a dead_lettered_at"
        )
    open_records = sum(1 for record in records if record.status.is_open)
    if summaries and summaries[-1]["open"] != open_records:
        problems.append(
            f"last run counted open {summaries[-1]['open']}, the table has {open_records} "
            "open records"
        )

    url = _reaper_queue(context, STUCK_CONSUMER)
    # A look without taking: visibility 0 leaves every message visible (and counted) as before.
    received = context.sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0, MessageAttributeNames=["All"]
    ).get("Messages", [])
    letters = [
        message
        for message in received
        if message.get("MessageAttributes", {}).get("inbox-message-key", {}).get("StringValue")
        == STUCK_KEY
    ]
    if len(letters) != 1 or json.loads(letters[0]["Body"]) != STUCK_PAYLOAD:
        problems.append(
            f"{shown_queue(url)}: expected one dead letter of {STUCK_KEY} with its payload, "
            f"found {[message.get('Body') for message in letters]}"
        )
    else:
        code = letters[0]["MessageAttributes"].get("inbox-error-code", {}).get("StringValue")
        if code != "lease_expired":
            problems.append(f"dead letter of {STUCK_KEY}: inbox-error-code {code!r}")
    if problems:
        raise SamLocalError("inbox-reaper:\n  " + "\n  ".join(problems))
    return [
        "runs: "
        + ", ".join(
            f"reaped {item['reaped']} dead_lettered {item['dead_lettered']} open {item['open']}"
            for item in summaries
        ),
        f"{STUCK_CONSUMER}#{STUCK_KEY} (lease expired > grace): FAILED lease_expired, "
        f"dead-lettered once to {shown_queue(url)}; {open_records} open record(s) in the table",
    ]


def check_outbox_relay(context: CheckContext) -> list[str]:
    """outbox-relay: one message on the notifications queue per INSERT of an outbox item, with
    the item's body and its message id as `outbox-message-id`; updates and removals sent
    nothing, and every response reported no failure."""
    inserted = {
        message.message_id: message.body
        for event in context.events
        for record in event["Records"]
        if record["eventName"] == "INSERT"
        for message in [outbox_message_of(record["dynamodb"]["NewImage"])]
        if message is not None
    }
    url = context.stack.variable(context.function, "NOTIFICATION_QUEUE_URL")
    sent = receive_all(context.sqs, url, delete=True)
    by_id = Counter(m["MessageAttributes"]["outbox-message-id"]["StringValue"] for m in sent)
    bodies = {m["MessageAttributes"]["outbox-message-id"]["StringValue"]: m["Body"] for m in sent}
    problems = [f"{key}: sent {n} times" for key, n in by_id.items() if n != 1]
    problems += [f"{key}: not sent" for key in inserted if key not in by_id]
    problems += [f"{key}: sent, not an INSERT" for key in by_id if key not in inserted]
    problems += [
        f"{key}: body {bodies[key]!r}"
        for key in inserted
        if bodies.get(key, inserted[key]) != inserted[key]
    ]
    problems += [f"response {r!r}" for r in context.responses if r != {"batchItemFailures": []}]
    fail_on("outbox-relay notifications queue", problems)
    return [
        f"notifications queue: {len(sent)} message(s), one per outbox INSERT, bodies as written"
    ]


def shown_queue(url: str) -> str:
    return url.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Scenario:
    seed: Callable[[CheckContext], None] | None
    check: Callable[[CheckContext], list[str]]


#: Table checks per function code folder; other functions get their responses checked only.
SCENARIOS: dict[str, Scenario] = {
    "order_events": Scenario(seed=seed_orders, check=check_orders),
    "payment_events": Scenario(seed=None, check=check_payments),
    "customer_notifications": Scenario(seed=None, check=check_notifications),
    "inbox_reaper": Scenario(seed=seed_reaper, check=check_reaper),
    "outbox_relay": Scenario(seed=None, check=check_outbox_relay),
}
