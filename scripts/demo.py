"""`make demo`: the example consumers on real local components, one story end to end.

Starts DynamoDB Local (the real engine, a Java process) and a moto server for SQS on free
loopback ports, creates the inbox and domain tables and the dead-letter queues, seeds stock, and
sends the sample events of `events/` through the two example functions:

  order-events    first delivery, the same batch redelivered (0 writes), poison to the DLQ,
                  a FIFO batch, an insufficient-stock rejection;
  payment-events  a Kafka multi-partition batch through a release with a bug, the same batch
                  redelivered to the fixed release, poison, and the replay of the DLQ through the
                  replay queue (what `aws sqs start-message-move-task` does in AWS).

Each batch prints one line per message with its exact outcome (from `consumer.process`), the
partial batch response the handler would return, and the AWS calls it cost. The demo ends with
the domain state and checks the invariants; it exits 1 if one is broken.

Usage: `make demo` (or `.venv/bin/python scripts/demo.py` once `make venv dynamodb-local` ran).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import boto3

from devkit.app_state import AppState
from devkit.dynamodb_local import dynamodb_local_or_exit
from devkit.events import load_event, sqs_event, sqs_record_from
from devkit.handlers import load_function, process
from devkit.meters import WRITE_OPERATIONS, RequestMeter
from devkit.offline_aws import ACCOUNT, REGION, local_client, use_offline_aws
from devkit.payloads import SAMPLE_SKUS
from devkit.queues import create_queue, queue_depth, receive_all, running_moto_server
from devkit.tables import create_domain_table, create_inbox_table
from lambda_inbox import InboxConfig, InboxConsumer, PoisonMessage
from lambda_inbox.kafka import is_kafka_event, kafka_response
from lambda_inbox.sqs import sqs_response
from lambda_inbox.store import Status, open_records

INBOX_TABLE = "demo-inbox"
DOMAIN_TABLE = "demo-domain"
SKUS = SAMPLE_SKUS
INITIAL_STOCK = 100
#: The bug of "release 1" of payment-events: payments above this amount were refused as poison.
RELEASE_1_LIMIT_CENTS = 3000
WIDTH = 100


# ---------------------------------------------------------------------------- output helpers


def banner(title: str) -> None:
    print()
    print("=" * WIDTH)
    print(title)
    print("=" * WIDTH)


STARTED = time.monotonic()


def step(title: str, *explanation: str) -> None:
    print()
    clock = f" [{time.monotonic() - STARTED:5.1f} s]"
    print(f"--- {title} " + "-" * max(3, WIDTH - len(title) - 5 - len(clock)) + clock)
    for line in explanation:
        print(f"    {line}")


def clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "~"


# ---------------------------------------------------------------------------- environment


def fake_aws_environment() -> None:
    """Local endpoints only: fake credentials, no profile, no ~/.aws files, quiet telemetry."""
    use_offline_aws(
        # Warnings (dead-lettered messages) are shown, condensed, after each batch.
        POWERTOOLS_LOG_LEVEL="WARNING",
        # No EMF metric JSON on stdout (Powertools honours this variable).
        POWERTOOLS_METRICS_DISABLED="true",
        POWERTOOLS_METRICS_NAMESPACE="LambdaInboxDemo",
    )


# ---------------------------------------------------------------------------- call accounting


def metered_default_session() -> RequestMeter:
    """A meter of every client boto3's default session creates: installed before the functions
    are imported, so it counts the consumers' calls (and only observes them). The demo's own
    clients have sessions of their own and are not counted."""
    boto3.setup_default_session(region_name=REGION)
    return RequestMeter().attach_to_session(boto3.DEFAULT_SESSION)


def summary(meter: RequestMeter) -> str:
    """The AWS calls of one batch: DynamoDB by operation, the write requests, SQS by operation."""
    dynamodb, sqs = meter.counts("dynamodb"), meter.counts("sqs")
    writes = sum(n for name, n in dynamodb.items() if name in WRITE_OPERATIONS)
    parts = ", ".join(f"{name} x{n}" for name, n in sorted(dynamodb.items())) or "none"
    text = f"DynamoDB requests: {sum(dynamodb.values())} ({parts}); write requests: {writes}"
    if sqs:
        text += "; SQS: " + ", ".join(f"{name} x{n}" for name, n in sorted(sqs.items()))
    return text


@dataclass
class Demo:
    meter: RequestMeter
    state: AppState  # admin clients, tables, the order-events DLQ
    queues: dict[str, str]
    orders: ModuleType | None = None
    payments: ModuleType | None = None

    @property
    def sqs(self) -> Any:
        return self.state.sqs

    @property
    def dynamodb(self) -> Any:
        return self.state.dynamodb

    # ---- running batches -------------------------------------------------------------

    def run(self, consumer: Any, event: Mapping[str, Any], title: str, *why: str) -> list[Any]:
        """Process one batch and print what happened to each message."""
        step(title, *why)
        self.meter.clear()
        with captured_logs(consumer) as logs:
            results = process(consumer, event)
            response = kafka_response(results) if is_kafka_event(event) else sqs_response(results)
        # Metrics are disabled for the demo; Powertools then keeps them: drop them per batch.
        consumer.telemetry.metrics.clear_metrics()
        print(f"    {'delivery':<24} {'message key':<38} {'outcome':<17} detail")
        for result in results:
            print(
                f"    {clip(delivery(result.message), 24):<24} "
                f"{clip(result.message_key or '-', 38):<38} "
                f"{result.outcome.value:<17} {clip(describe(result), 40)}"
            )
        totals = Counter(result.outcome.value for result in results)
        print("    totals: " + ", ".join(f"{n} {outcome}" for outcome, n in totals.items()))
        print(f"    batch response: {json.dumps(response)}")
        print(f"    {summary(self.meter)}")
        for line in logs.getvalue().splitlines():
            print(f"    log: {summarize_log(line)}")
        return list(results)

    # ---- queues --------------------------------------------------------------------------

    def receive_all(self, queue: str, *, delete: bool) -> list[Any]:
        """Every message of a queue (peek when `delete` is False: visibility timeout 0)."""
        timeout = 30 if delete else 0
        return receive_all(self.sqs, self.queues[queue], delete=delete, visibility_timeout=timeout)

    def depth(self, queue: str) -> int:
        return queue_depth(self.sqs, self.queues[queue])

    def show_dead_letters(self, queue: str) -> None:
        messages = self.receive_all(queue, delete=False)
        print(f"    {queue}: {len(messages)} message(s); their attributes:")
        for message in messages:
            attributes = message.get("MessageAttributes", {})
            print(
                f"    - inbox-error-code={value(attributes, 'inbox-error-code')}  "
                f"inbox-message-key={value(attributes, 'inbox-message-key')}"
            )
            print(f"      inbox-error={clip(value(attributes, 'inbox-error'), WIDTH - 18)}")
            others = [
                f"{name}={clip(value(attributes, name), 30)}"
                for name in sorted(attributes)
                if not name.startswith("inbox-error") and name != "inbox-message-key"
            ]
            if others:
                print(f"      also: {clip(', '.join(others), WIDTH - 12)}")
            print(f"      body: {clip(message['Body'], WIDTH - 12)}")

    def redrive(self, source: str, destination: str) -> int:
        """Move every message with its body and attributes, as StartMessageMoveTask does."""
        moved = self.receive_all(source, delete=True)
        for message in moved:
            attributes = {
                name: {
                    k: v for k, v in attr.items() if k in ("DataType", "StringValue", "BinaryValue")
                }
                for name, attr in message.get("MessageAttributes", {}).items()
            }
            self.sqs.send_message(
                QueueUrl=self.queues[destination],
                MessageBody=message["Body"],
                MessageAttributes=attributes,
            )
        return len(moved)

    def lambda_event_from(self, queue: str) -> dict[str, Any]:
        """Receive a queue's messages as the Lambda SQS event source would deliver them."""
        arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}"
        messages = self.receive_all(queue, delete=False)[:10]
        return sqs_event(*(sqs_record_from(message, arn=arn) for message in messages))


@contextlib.contextmanager
def captured_logs(consumer: Any) -> Iterator[io.StringIO]:
    """The function's structured log lines of one batch, to print them after its table."""
    handler = consumer.telemetry.logger.registered_handler
    buffer = io.StringIO()
    previous = handler.setStream(buffer) if isinstance(handler, logging.StreamHandler) else None
    try:
        yield buffer
    finally:
        if previous is not None:
            handler.setStream(previous)


def summarize_log(line: str) -> str:
    """One structured (JSON) log line, reduced to its level, first message line and key fields."""
    try:
        record = json.loads(line)
    except ValueError:
        return clip(line, WIDTH - 9)
    fields = " ".join(
        f"{name}={record[name]}" for name in ("error_code", "message_key") if record.get(name)
    )
    message = str(record.get("message", "")).splitlines()[0]
    return clip(f"{record.get('level')} {fields} | {message}", WIDTH - 9)


def delivery(message: Any) -> str:
    identifier = message.item_identifier
    if isinstance(identifier, dict):
        return f"{identifier['topic-partition']}@{identifier['offset']}"
    return f"msg {str(identifier)[:8]}"


def describe(result: Any) -> str:
    if result.error_code:
        return f"{result.error_code}: {result.detail}"
    if result.outcome.value == "business_outcome":
        return "alternative writes committed"
    return ""


def value(attributes: Mapping[str, Any], name: str) -> str:
    attribute = attributes.get(name) or {}
    if "StringValue" in attribute:
        return str(attribute["StringValue"])
    if "BinaryValue" in attribute:
        return f"<{len(attribute['BinaryValue'])} bytes>"
    return "-"


# ---------------------------------------------------------------------------- the story


def setup(meter: RequestMeter, dynamodb_endpoint: str, sqs_endpoint: str) -> Demo:
    dynamodb = local_client("dynamodb", dynamodb_endpoint, own_session=True)
    sqs = local_client("sqs", sqs_endpoint, own_session=True)
    create_inbox_table(dynamodb, INBOX_TABLE)
    create_domain_table(dynamodb, DOMAIN_TABLE)
    queues = {
        name: create_queue(sqs, name)
        for name in ("order-events-dlq", "payment-events-dlq", "payment-replay")
    }
    state = AppState(
        dynamodb,
        sqs,
        inbox=INBOX_TABLE,
        domain=DOMAIN_TABLE,
        dlq_url=queues["order-events-dlq"],
        endpoints={"dynamodb": dynamodb_endpoint, "sqs": sqs_endpoint},
    )
    state.seed_stock(dict.fromkeys(SKUS, INITIAL_STOCK))
    os.environ.update(state.function_environment())
    print(f"DynamoDB Local: {dynamodb_endpoint}   SQS (moto server): {sqs_endpoint}")
    print(
        f"tables: {INBOX_TABLE} (pk, TTL expires_at, GSI open-records), {DOMAIN_TABLE} (pk, sk); "
        f"queues: {', '.join(queues)}"
    )
    print(f"stock seeded: {', '.join(SKUS)} with available={INITIAL_STOCK}")
    demo = Demo(meter, state, queues)
    # Each function reads its environment at import time, as in Lambda.
    os.environ["DEAD_LETTER_QUEUE_URL"] = queues["order-events-dlq"]
    demo.orders = load_function("order_events")
    os.environ["DEAD_LETTER_QUEUE_URL"] = queues["payment-events-dlq"]
    demo.payments = load_function("payment_events")
    return demo


def order_story(demo: Demo) -> None:
    assert demo.orders is not None
    consumer = demo.orders.consumer
    banner("order-events: SQS consumer of OrderPlaced (key: event_id)")
    demo.run(
        consumer,
        load_event("sqs-order-single.json"),
        "1. first delivery: sqs-order-single.json",
        "Inbox record + stock updates + shipment commit in one TransactWriteItems.",
    )
    batch = load_event("sqs-order-batch-duplicates.json")
    demo.run(
        consumer,
        batch,
        "2. a batch with duplicates inside it: sqs-order-batch-duplicates.json",
        "Record 5 is a producer retry (new messageId, same event_id); record 6 an SQS",
        "redelivery (same messageId). Four new orders share one group-commit transaction.",
    )
    demo.run(
        consumer,
        batch,
        "3. the same batch redelivered (e.g. the invocation timed out after committing)",
        "One BatchGetItem finds every record: all duplicates, zero write requests (0 WCU).",
    )
    demo.run(
        consumer,
        load_event("sqs-order-poison.json"),
        "4. poison among valid orders: sqs-order-poison.json",
        "Not JSON, invalid fields, qty 0: dead-lettered with their original attributes,",
        "FAILED inbox records written, and acknowledged (not in batchItemFailures).",
    )
    demo.show_dead_letters("order-events-dlq")
    demo.run(
        consumer,
        load_event("sqs-order-fifo.json"),
        "5. a FIFO batch: sqs-order-fifo.json",
        "Ordering scope = the queue (fifo_failure_mode='stop'); no failures, so all commit.",
    )
    demo.run(
        consumer,
        load_event("sqs-order-insufficient-stock.json"),
        "6. not enough stock: sqs-order-insufficient-stock.json (1000 x SKU-RED-MUG)",
        "The stock condition fails; on_condition_failed writes a REJECTION instead. A business",
        "outcome, not an error: no retry, no DLQ, no stock change.",
    )


def release_1(demo: Demo) -> Any:
    """payment-events as first released: it refused large payments as poison (a bug)."""
    payments = demo.payments
    assert payments is not None

    def record_payment_with_bug(payment: Any, uow: Any) -> None:
        if payment.amount_cents > RELEASE_1_LIMIT_CENTS:
            raise PoisonMessage(
                f"amount_cents {payment.amount_cents} above the review limit "
                f"{RELEASE_1_LIMIT_CENTS}"
            )
        payments.record_payment(payment, uow)

    config = InboxConfig(
        consumer="payment-events",
        inbox_table=INBOX_TABLE,
        dead_letter_queue_url=demo.queues["payment-events-dlq"],
    )
    return InboxConsumer(
        "payment-events",
        model=payments.PaymentCaptured,
        decide=record_payment_with_bug,
        on_condition_failed=payments.skip_logical_duplicate,
        key="event_id",
        config=config,
    )


def payment_story(demo: Demo) -> None:
    assert demo.payments is not None
    consumer = demo.payments.consumer
    banner("payment-events: MSK consumer of PaymentCaptured, also fed by the SQS replay queue")
    multi = load_event("msk-payment-multi-partition.json")
    demo.run(
        release_1(demo),
        multi,
        "7. Kafka, 3 partitions: msk-payment-multi-partition.json, through a release with a bug",
        f"That release refuses payments above {RELEASE_1_LIMIT_CENTS} cents as poison. Offset 43",
        "repeats offset 41 (producer retry). Poison does not stop a partition.",
    )
    demo.run(
        consumer,
        multi,
        "8. the same Kafka batch redelivered to the fixed release",
        "Committed records are duplicates. The two refused payments have FAILED inbox records,",
        "which are claimable: the fixed code commits them now.",
    )
    demo.run(
        consumer,
        load_event("msk-payment-single.json"),
        "9. msk-payment-single.json",
        "One record on payments-0, offset 15.",
    )
    demo.run(
        consumer,
        load_event("msk-payment-poison.json"),
        "10. Kafka poison: msk-payment-poison.json",
        "Not UTF-8, not JSON, amount_cents 0: dead-lettered with kafka-* attributes; the",
        "valid records before and after them commit.",
    )
    step(
        "11. the payment-events DLQ before the replay",
        "Two copies from step 7 (since fixed, already committed in step 8) and three real poison.",
    )
    demo.show_dead_letters("payment-events-dlq")

    step(
        "12. replay by redrive: payment-events-dlq -> payment-replay",
        "In AWS: aws sqs start-message-move-task --source-arn <PaymentEventsDLQ ARN> "
        "--destination-arn <PaymentReplayQueue ARN>",
        "moto has no StartMessageMoveTask, so the demo moves the messages itself: same bodies,",
        "same attributes, new messageIds. The replay queue triggers the same function.",
    )
    moved = demo.redrive("payment-events-dlq", "payment-replay")
    print(
        f"    moved {moved} message(s); payment-events-dlq now holds {demo.depth('payment-events-dlq')}"
    )
    replay = demo.lambda_event_from("payment-replay")
    results = demo.run(
        consumer,
        replay,
        "13. the replay queue's batch through payment-events (same consumer name, same inbox)",
        "Already committed -> duplicate, no effect. Still-poison messages go back to the DLQ.",
    )
    failed = {str(r.message.item_identifier) for r in results if r.outcome.needs_redelivery}
    for record in replay["Records"]:  # what the event source does with a successful batch item
        if record["messageId"] not in failed:
            demo.sqs.delete_message(
                QueueUrl=demo.queues["payment-replay"], ReceiptHandle=record["receiptHandle"]
            )
    print(
        f"    afterwards: payment-replay holds {demo.depth('payment-replay')}, "
        f"payment-events-dlq holds {demo.depth('payment-events-dlq')} (the real poison)"
    )


def stuck_lease_story(demo: Demo) -> bool:
    """customer-notifications (leased mode): a claim whose process died, swept by the reaper."""
    from lambda_inbox.identity import KeyStrategy, identify
    from lambda_inbox.lease import LeasePolicy, LeaseStore
    from lambda_inbox.messages import InboundMessage
    from lambda_inbox.reaper import Reaper, ReaperSettings

    banner("customer-notifications (leased mode): a stuck lease, reaped and dead-lettered")
    dlq = demo.sqs.create_queue(QueueName="notifications-dlq")["QueueUrl"]
    body = json.dumps(
        {
            "event_id": "evt-ntf-0001",
            "customer_id": "cust-001",
            "order_id": "ord-1001",
            "template": "order-shipped",
        }
    ).encode()
    message = InboundMessage("m-1", "m-1", body, "arn:aws:sqs:demo:notifications", 0)
    delivery = identify(message, KeyStrategy.from_body("event_id"))
    leases = LeaseStore(
        demo.dynamodb, table=INBOX_TABLE, consumer="customer-notifications", policy=LeasePolicy()
    )
    leases.claim(delivery, now=time.time() - 3600)
    step(
        "a delivery claimed evt-ntf-0001 an hour ago, then its process died",
        "IN_PROGRESS record with a 60 s lease that expired long ago; the message never came back",
    )
    reaper = Reaper(
        demo.dynamodb,
        ReaperSettings(table=INBOX_TABLE, dead_letter_queues={"customer-notifications": dlq}),
        sqs=demo.sqs,
    )
    preview = reaper.reap_once(dry_run=True)
    print(f"    dry run: would reap {preview.reaped}, dead-letter {preview.dead_lettered}")
    summary = reaper.reap_once()
    print(
        f"    reaper run: reaped={summary.reaped} dead_lettered={summary.dead_lettered} "
        f"open={summary.open} oldest_open_age={summary.oldest_open_age_seconds:.0f} s"
    )
    again = reaper.reap_once()
    print(
        f"    second run: reaped={again.reaped} dead_lettered={again.dead_lettered} (nothing twice)"
    )
    sent = demo.sqs.receive_message(
        QueueUrl=dlq, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages", [])
    for item in sent:
        attributes = item.get("MessageAttributes", {})
        print(
            f"    DLQ: key={value(attributes, 'inbox-message-key')} "
            f"code={value(attributes, 'inbox-error-code')} body={clip(item['Body'], 60)}"
        )
    ok = (summary.reaped, summary.dead_lettered, again.dead_lettered, len(sent)) == (1, 1, 0, 1)
    print(
        "    stuck lease reaped and dead-lettered once" if ok else "    REAPER DID NOT DO ITS JOB"
    )
    return ok


def final_state(demo: Demo) -> bool:
    banner("final state of the domain table, and the invariants")
    items = demo.state.domain_items()
    ok = True
    print("    stock:")
    for sku in SKUS:
        stock = next(i for i in items if i["pk"] == f"SKU#{sku}" and i["sk"] == "STOCK")
        available, reserved = int(stock["available"]), int(stock["reserved"])
        shipped = sum(
            int(line["qty"])
            for i in items
            if i["sk"] == "SHIPMENT"
            for line in i["lines"]
            if line["sku"] == sku
        )
        fine = available + reserved == INITIAL_STOCK and reserved == shipped
        ok = ok and fine
        print(
            f"      {sku:<14} available={available:<4} reserved={reserved:<3} "
            f"(sum of shipment lines {shipped}) {'ok' if fine else 'BROKEN'}"
        )
    shipments = sorted(i["pk"][6:] for i in items if i["sk"] == "SHIPMENT")
    rejections = [f"{i['pk'][6:]} ({i['reason']})" for i in items if i["sk"] == "REJECTION"]
    print(f"    shipments ({len(shipments)}): {', '.join(shipments)}")
    print(f"    rejections: {', '.join(rejections) or '-'}")
    print("    balances:")
    customers = sorted({i["pk"] for i in items if i["pk"].startswith("CUSTOMER#")})
    for customer in customers:
        balance = next(i for i in items if i["pk"] == customer and i["sk"] == "BALANCE")
        paid = [
            int(i["amount_cents"]) for i in items if i["pk"] == customer and i["sk"] != "BALANCE"
        ]
        fine = int(balance["balance_cents"]) == sum(paid) and int(balance["payments"]) == len(paid)
        ok = ok and fine
        print(
            f"      {customer[9:]:<9} balance_cents={int(balance['balance_cents']):<6} "
            f"payments={int(balance['payments'])}  (sum of {len(paid)} PAYMENT items {sum(paid)}) "
            f"{'ok' if fine else 'BROKEN'}"
        )
    counts: Counter[tuple[str, str]] = Counter()
    for page in demo.dynamodb.get_paginator("scan").paginate(
        TableName=INBOX_TABLE,
        ProjectionExpression="pk, #s",
        ExpressionAttributeNames={"#s": "status"},
    ):
        for item in page["Items"]:
            counts[(item["pk"]["S"].split("#", 1)[0], item["status"]["S"])] += 1
    print(
        "    inbox records: " + ", ".join(f"{c} {s}: {n}" for (c, s), n in sorted(counts.items()))
    )
    failed = open_records(
        demo.dynamodb, INBOX_TABLE, statuses=(Status.FAILED,), consumer="payment-events"
    )
    print(
        "    open-records index, FAILED records of payment-events (what `lambda-inbox failed` lists):"
    )
    for record in failed:
        print(
            f"      {clip(record.message_key, 40):<40} {record.error_code or '':<18} "
            f"{record.failed_at}"
        )
    print()
    print("every effect happened once per event_id" if ok else "AN INVARIANT IS BROKEN")
    return ok


def main() -> int:
    fake_aws_environment()
    meter = metered_default_session()
    with contextlib.ExitStack() as stack:
        dynamodb_endpoint = stack.enter_context(dynamodb_local_or_exit())
        sqs_endpoint = stack.enter_context(running_moto_server())
        demo = setup(meter, dynamodb_endpoint, sqs_endpoint)
        order_story(demo)
        payment_story(demo)
        reaped = stuck_lease_story(demo)
        ok = final_state(demo) and reaped
    print(f"demo finished in {time.monotonic() - STARTED:.1f} s; DynamoDB Local and moto stopped")
    return 0 if ok else 1


def _terminate(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted; DynamoDB Local and moto stopped", file=sys.stderr)
        sys.exit(130)
