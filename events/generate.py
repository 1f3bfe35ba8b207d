"""Generate the sample Lambda events in this directory.

The output is deterministic: IDs, receipt handles and timestamps are derived from fixed seeds, and
md5OfBody / base64 values are computed from the bodies, so running this script reproduces the
committed JSON files byte for byte.

    python events/generate.py           # rewrite the JSON files next to this script
    python events/generate.py --check   # exit 1 if any committed file differs from the output

Standard library only; no AWS access.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

REGION = "us-east-1"
ACCOUNT = "123456789012"
ORDER_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lambda-inbox-OrderEventsQueue"
ORDER_FIFO_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lambda-inbox-OrderEventsQueue.fifo"
PAYMENT_REPLAY_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lambda-inbox-PaymentReplayQueue"
NOTIFICATION_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lambda-inbox-notifications"
REAPER_SCHEDULE_ARN = (
    f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/default/lambda-inbox-InboxReaperFunctionSweep"
)
MSK_CLUSTER_ARN = (
    f"arn:aws:kafka:{REGION}:{ACCOUNT}:cluster/payments/abcd1234-5678-4def-9abc-0123456789ab-2"
)
MSK_BOOTSTRAP_SERVERS = ",".join(
    f"b-{n}.payments.a1b2c3.c2.kafka.{REGION}.amazonaws.com:9098" for n in (1, 2, 3)
)
TOPIC = "payments"

# Fake principals: an IAM user for producers, the payment function's role for dead-lettered copies.
PRODUCER_SENDER_ID = "AIDAEXAMPLEPRODUCER01"
OPERATOR_SENDER_ID = "AIDAEXAMPLEOPERATOR01"
FUNCTION_SENDER_ID = "AROAEXAMPLEFUNCTION01:lambda-inbox-PaymentEventsFunction-Ab12Cd34Ef56"

PRICES = {"SKU-RED-MUG": 1299, "SKU-BLUE-CAP": 1850, "SKU-GREEN-PEN": 249}

# 2024-11-21T12:00:00Z in epoch milliseconds; every timestamp is an offset from it.
BASE_MS = 1732190400000


# --------------------------------------------------------------------------- helpers


def fake_uuid(seed: str) -> str:
    """A version-4-shaped UUID derived from seed (stable across runs)."""
    return str(uuid.UUID(bytes=hashlib.md5(seed.encode()).digest(), version=4))


def receipt_handle(seed: str) -> str:
    """An opaque SQS-style receipt handle ("AQEB" + base64), stable across runs."""
    raw = b"".join(hashlib.sha256(f"{seed}/{i}".encode()).digest() for i in range(4))
    return "AQEB" + base64.b64encode(raw).decode()


def compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def header(name: str, value: str) -> dict[str, list[int]]:
    return {name: list(value.encode())}


def string_attr(value: str) -> dict[str, Any]:
    return {
        "stringValue": value,
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }


def binary_attr(value: bytes) -> dict[str, Any]:
    return {
        "binaryValue": b64(value),
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "Binary",
    }


def order(
    n: int, order_no: int, customer: str, lines: list[tuple[str, int]], **override: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "event_id": f"evt-order-{n:04d}",
        "order_id": f"ord-{order_no}",
        "customer_id": customer,
        "lines": [{"sku": sku, "qty": qty} for sku, qty in lines],
        "total_cents": sum(PRICES[sku] * qty for sku, qty in lines),
    }
    body.update(override)
    return body


def payment(n: int, order_no: int, customer: str, amount_cents: int) -> dict[str, Any]:
    return {
        "event_id": f"evt-pay-{n:04d}",
        "payment_id": f"pay-{n:04d}",
        "order_id": f"ord-{order_no}",
        "customer_id": customer,
        "amount_cents": amount_cents,
    }


def sqs_record(
    *,
    seed: str,
    body: str,
    queue_arn: str,
    sent_ms: int,
    receive_count: int = 1,
    delivery: int = 1,
    first_receive_ms: int | None = None,
    sender_id: str = PRODUCER_SENDER_ID,
    fifo: dict[str, str] | None = None,
    message_attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One record of an SQS event. seed fixes the messageId; delivery varies the receipt handle."""
    first = first_receive_ms if first_receive_ms is not None else sent_ms + 37
    attributes = {
        "ApproximateReceiveCount": str(receive_count),
        "SentTimestamp": str(sent_ms),
    }
    if fifo is not None:
        attributes["SequenceNumber"] = fifo["SequenceNumber"]
        attributes["MessageGroupId"] = fifo["MessageGroupId"]
    attributes["SenderId"] = sender_id
    if fifo is not None:
        attributes["MessageDeduplicationId"] = fifo["MessageDeduplicationId"]
    attributes["ApproximateFirstReceiveTimestamp"] = str(first)
    return {
        "messageId": fake_uuid(f"message/{seed}"),
        "receiptHandle": receipt_handle(f"receipt/{seed}/{delivery}"),
        "body": body,
        "attributes": attributes,
        "messageAttributes": message_attributes or {},
        "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


def kafka_record(
    *,
    partition: int,
    offset: int,
    timestamp_ms: int,
    value: bytes,
    key: str | None = None,
    headers: list[dict[str, list[int]]] | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "topic": TOPIC,
        "partition": partition,
        "offset": offset,
        "timestamp": timestamp_ms,
        "timestampType": "CREATE_TIME",
    }
    if key is not None:  # Lambda leaves "key" out for records produced without a key
        record["key"] = b64(key.encode())
    record["value"] = b64(value)
    record["headers"] = headers or []
    return record


def msk_event(records: list[dict[str, Any]]) -> dict[str, Any]:
    by_partition: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_partition.setdefault(f"{record['topic']}-{record['partition']}", []).append(record)
    for partition_records in by_partition.values():
        partition_records.sort(key=lambda r: r["offset"])
    return {
        "eventSource": "aws:kafka",
        "eventSourceArn": MSK_CLUSTER_ARN,
        "bootstrapServers": MSK_BOOTSTRAP_SERVERS,
        "records": dict(sorted(by_partition.items())),
    }


def json_value(obj: Any) -> bytes:
    return compact(obj).encode()


# --------------------------------------------------------------------------- SQS order events


def sqs_order_single() -> dict[str, Any]:
    body = order(1, 1001, "cust-001", [("SKU-RED-MUG", 1), ("SKU-BLUE-CAP", 1)])
    return {
        "Records": [
            sqs_record(
                seed="order-single-1",
                body=compact(body),
                queue_arn=ORDER_QUEUE_ARN,
                sent_ms=BASE_MS + 1_000,
            )
        ]
    }


def sqs_order_batch_duplicates() -> dict[str, Any]:
    t = BASE_MS + 60_000
    o1 = compact(order(101, 1101, "cust-001", [("SKU-RED-MUG", 1), ("SKU-GREEN-PEN", 2)]))
    o2 = compact(order(102, 1102, "cust-002", [("SKU-BLUE-CAP", 1)]))
    o3 = compact(order(103, 1103, "cust-003", [("SKU-GREEN-PEN", 3)]))
    o4 = compact(order(104, 1104, "cust-001", [("SKU-RED-MUG", 2), ("SKU-BLUE-CAP", 1)]))
    q = ORDER_QUEUE_ARN
    return {
        "Records": [
            sqs_record(seed="order-batch-1", body=o1, queue_arn=q, sent_ms=t + 10),
            sqs_record(seed="order-batch-2", body=o2, queue_arn=q, sent_ms=t + 20),
            sqs_record(seed="order-batch-3", body=o3, queue_arn=q, sent_ms=t + 30),
            sqs_record(seed="order-batch-4", body=o4, queue_arn=q, sent_ms=t + 40),
            # Producer retry of record 1: same body (same event_id), new SQS message.
            sqs_record(seed="order-batch-1-retry", body=o1, queue_arn=q, sent_ms=t + 2_510),
            # SQS redelivery of record 2: same messageId, new receipt handle, receive count 2.
            sqs_record(
                seed="order-batch-2",
                body=o2,
                queue_arn=q,
                sent_ms=t + 20,
                receive_count=2,
                delivery=2,
                first_receive_ms=t + 57,
            ),
        ]
    }


def sqs_order_poison() -> dict[str, Any]:
    t = BASE_MS + 120_000
    q = ORDER_QUEUE_ARN
    valid_first = compact(order(201, 1201, "cust-001", [("SKU-BLUE-CAP", 1)]))
    not_json = "{not json"
    missing = compact({"event_id": "evt-order-0203", "order_id": "ord-1203"})
    qty_zero = compact(order(204, 1204, "cust-002", [("SKU-RED-MUG", 1), ("SKU-GREEN-PEN", 0)]))
    valid_last = compact(order(205, 1205, "cust-003", [("SKU-GREEN-PEN", 2)]))
    return {
        "Records": [
            sqs_record(seed="order-poison-1", body=valid_first, queue_arn=q, sent_ms=t + 10),
            sqs_record(
                seed="order-poison-2",
                body=not_json,
                queue_arn=q,
                sent_ms=t + 20,
                message_attributes={
                    "trace-id": string_attr("trace-7f3a9c2e-0002"),
                    "content-type": string_attr("application/json"),
                },
            ),
            sqs_record(
                seed="order-poison-3",
                body=missing,
                queue_arn=q,
                sent_ms=t + 30,
                message_attributes={
                    "trace-id": string_attr("trace-7f3a9c2e-0003"),
                    "signature": binary_attr(hashlib.sha256(missing.encode()).digest()),
                },
            ),
            sqs_record(
                seed="order-poison-4",
                body=qty_zero,
                queue_arn=q,
                sent_ms=t + 40,
                message_attributes={"trace-id": string_attr("trace-7f3a9c2e-0004")},
            ),
            sqs_record(seed="order-poison-5", body=valid_last, queue_arn=q, sent_ms=t + 50),
        ]
    }


def sqs_order_fifo() -> dict[str, Any]:
    t = BASE_MS + 180_000
    q = ORDER_FIFO_QUEUE_ARN
    specs = [
        (301, 1301, "cust-001", [("SKU-RED-MUG", 1)]),
        (302, 1302, "cust-002", [("SKU-BLUE-CAP", 2)]),
        (303, 1303, "cust-001", [("SKU-GREEN-PEN", 1), ("SKU-BLUE-CAP", 1)]),
        (304, 1304, "cust-002", [("SKU-RED-MUG", 1), ("SKU-GREEN-PEN", 1)]),
    ]
    records = []
    for i, (n, order_no, customer, lines) in enumerate(specs):
        body = order(n, order_no, customer, lines)
        records.append(
            sqs_record(
                seed=f"order-fifo-{n}",
                body=compact(body),
                queue_arn=q,
                sent_ms=t + 100 * (i + 1),
                fifo={
                    "SequenceNumber": str(18889497286421094400 + 7_340_032 * (i + 1)),
                    "MessageGroupId": customer,
                    "MessageDeduplicationId": body["event_id"],
                },
            )
        )
    return {"Records": records}


def sqs_order_insufficient_stock() -> dict[str, Any]:
    body = order(401, 1401, "cust-004", [("SKU-RED-MUG", 1000)])
    return {
        "Records": [
            sqs_record(
                seed="order-insufficient-1",
                body=compact(body),
                queue_arn=ORDER_QUEUE_ARN,
                sent_ms=BASE_MS + 240_000,
            )
        ]
    }


# --------------------------------------------------------------------------- MSK payment events


def msk_payment_single() -> dict[str, Any]:
    # Pays for ord-1001 from sqs-order-single.json (1 x SKU-RED-MUG + 1 x SKU-BLUE-CAP).
    p = payment(1, 1001, "cust-001", PRICES["SKU-RED-MUG"] + PRICES["SKU-BLUE-CAP"])
    return msk_event(
        [
            kafka_record(
                partition=0,
                offset=15,
                timestamp_ms=BASE_MS + 5_000,
                key=p["order_id"],
                value=json_value(p),
            )
        ]
    )


# (payment number, customer number, amount_cents); order number = 1000 + payment number.
MULTI_PARTITION_PAYMENTS = [
    (101, 1, 1797),
    (102, 2, 1850),
    (103, 3, 747),
    (104, 1, 4448),
    (105, 2, 2599),
    (106, 3, 1299),
    (107, 4, 249),
    (108, 5, 3149),
    (109, 1, 498),
]


def msk_payment_multi_partition() -> dict[str, Any]:
    t = BASE_MS + 300_000
    p = {n: payment(n, 1000 + n, f"cust-{c:03d}", amt) for n, c, amt in MULTI_PARTITION_PAYMENTS}

    def rec(
        n: int,
        partition: int,
        offset: int,
        dt: int,
        headers: list[dict[str, list[int]]] | None = None,
    ) -> dict[str, Any]:
        return kafka_record(
            partition=partition,
            offset=offset,
            timestamp_ms=t + dt,
            key=p[n]["order_id"],
            value=json_value(p[n]),
            headers=headers,
        )

    return msk_event(
        [
            rec(101, 0, 10, 10),
            rec(102, 0, 11, 20, [header("content-type", "application/json")]),
            rec(103, 0, 12, 30),
            rec(104, 1, 40, 15),
            rec(105, 1, 41, 25),
            rec(106, 1, 42, 35),
            # Producer retry: the same payment (same key, same value) written again at offset 43.
            rec(105, 1, 43, 1_525),
            rec(107, 2, 7, 12),
            rec(108, 2, 8, 22, [header("idempotency-key", "evt-pay-0108")]),
            rec(109, 2, 9, 32),
        ]
    )


def msk_payment_poison() -> dict[str, Any]:
    t = BASE_MS + 360_000
    valid_first = payment(201, 1201, "cust-001", 1850)
    invalid = payment(204, 1204, "cust-002", 0)
    valid_last = payment(205, 1205, "cust-003", 498)
    return msk_event(
        [
            kafka_record(
                partition=0,
                offset=200,
                timestamp_ms=t + 10,
                key=valid_first["order_id"],
                value=json_value(valid_first),
            ),
            # Valid base64, but the decoded bytes are not UTF-8 (0xff 0xfe).
            kafka_record(partition=0, offset=201, timestamp_ms=t + 20, value=b"\xff\xfe"),
            kafka_record(
                partition=0,
                offset=202,
                timestamp_ms=t + 30,
                key="ord-1202",
                value=b"payment captured: ord-1202 amount=1299",
            ),
            kafka_record(
                partition=0,
                offset=203,
                timestamp_ms=t + 40,
                key=invalid["order_id"],
                value=json_value(invalid),
                headers=[header("trace-id", "trace-5b1d0e77-0203")],
            ),
            kafka_record(
                partition=0, offset=204, timestamp_ms=t + 50, value=json_value(valid_last)
            ),
        ]
    )


HOT_CUSTOMER = "cust-042"


def hot_customer_amount(i: int) -> int:
    return 1000 + 137 * i


def msk_payment_hot_customer() -> dict[str, Any]:
    t = BASE_MS + 420_000
    records = []
    for i in range(20):
        n = 301 + i
        p = payment(n, 3000 + n, HOT_CUSTOMER, hot_customer_amount(i))
        partition = i % 2
        records.append(
            kafka_record(
                partition=partition,
                offset=(500 if partition == 0 else 600) + i // 2,
                timestamp_ms=t + 10 * (i + 1),
                key=p["order_id"],
                value=json_value(p),
            )
        )
    return msk_event(records)


# --------------------------------------------------------------------------- SQS payment replay


def sqs_payment_replay() -> dict[str, Any]:
    t = BASE_MS + 86_400_000  # a day later: an operator redrives the dead-letter queue
    q = PAYMENT_REPLAY_QUEUE_ARN
    dead_lettered = payment(501, 1501, "cust-003", 2099)
    # Identical to the value in msk-payment-single.json: already committed if that ran first.
    replayed_single = payment(1, 1001, "cust-001", PRICES["SKU-RED-MUG"] + PRICES["SKU-BLUE-CAP"])
    return {
        "Records": [
            sqs_record(
                seed="payment-replay-1",
                body=compact(dead_lettered),
                queue_arn=q,
                sent_ms=t + 10,
                sender_id=FUNCTION_SENDER_ID,
                message_attributes={
                    "inbox-error-code": string_attr("invalid_payload"),
                    "inbox-error": string_attr(
                        "customer_id: String should match pattern '^C-[0-9]{6}$'"
                    ),
                    "inbox-message-key": string_attr("evt-pay-0501"),
                    "kafka-topic": string_attr(TOPIC),
                    "kafka-partition": string_attr("2"),
                    "kafka-offset": string_attr("77"),
                    "kafka-key": string_attr(dead_lettered["order_id"]),
                },
            ),
            sqs_record(
                seed="payment-replay-2",
                body=compact(replayed_single),
                queue_arn=q,
                sent_ms=t + 20,
                sender_id=OPERATOR_SENDER_ID,
            ),
        ]
    }


# --------------------------------------------------------------------------- SQS notifications


def notification(n: int, order_no: int, customer: str, template: str) -> dict[str, Any]:
    return {
        "event_id": f"evt-notify-{n:04d}",
        "customer_id": customer,
        "order_id": f"ord-{order_no}",
        "template": template,
    }


def sqs_notification_single() -> dict[str, Any]:
    # Tells cust-001 that ord-1001 (sqs-order-single.json) shipped.
    body = notification(1, 1001, "cust-001", "order-shipped")
    return {
        "Records": [
            sqs_record(
                seed="notification-single-1",
                body=compact(body),
                queue_arn=NOTIFICATION_QUEUE_ARN,
                sent_ms=BASE_MS + 7_000,
            )
        ]
    }


def sqs_notification_batch_duplicates() -> dict[str, Any]:
    t = BASE_MS + 480_000
    q = NOTIFICATION_QUEUE_ARN
    n1 = compact(notification(101, 1101, "cust-001", "order-shipped"))
    n2 = compact(notification(102, 1102, "cust-002", "order-shipped"))
    n3 = compact(notification(103, 1401, "cust-004", "order-rejected"))
    return {
        "Records": [
            sqs_record(seed="notification-batch-1", body=n1, queue_arn=q, sent_ms=t + 10),
            sqs_record(seed="notification-batch-2", body=n2, queue_arn=q, sent_ms=t + 20),
            sqs_record(seed="notification-batch-3", body=n3, queue_arn=q, sent_ms=t + 30),
            # SQS redelivery of record 1: same messageId, new receipt handle, receive count 2.
            sqs_record(
                seed="notification-batch-1",
                body=n1,
                queue_arn=q,
                sent_ms=t + 10,
                receive_count=2,
                delivery=2,
                first_receive_ms=t + 47,
            ),
            # Producer retry of record 2: same body (same event_id), new SQS message.
            sqs_record(seed="notification-batch-2-retry", body=n2, queue_arn=q, sent_ms=t + 2_020),
        ]
    }


def sqs_notification_poison() -> dict[str, Any]:
    t = BASE_MS + 540_000
    q = NOTIFICATION_QUEUE_ARN
    valid_first = compact(notification(201, 1201, "cust-001", "order-shipped"))
    no_template = compact({"event_id": "evt-notify-0202", "customer_id": "cust-002"})
    empty_customer = compact(notification(203, 1203, "", "order-shipped"))
    valid_last = compact(notification(204, 1205, "cust-003", "order-shipped"))
    return {
        "Records": [
            sqs_record(seed="notification-poison-1", body=valid_first, queue_arn=q, sent_ms=t + 10),
            sqs_record(
                seed="notification-poison-2",
                body=no_template,
                queue_arn=q,
                sent_ms=t + 20,
                message_attributes={"trace-id": string_attr("trace-3c9e41d0-0202")},
            ),
            sqs_record(
                seed="notification-poison-3", body=empty_customer, queue_arn=q, sent_ms=t + 30
            ),
            sqs_record(seed="notification-poison-4", body=valid_last, queue_arn=q, sent_ms=t + 40),
        ]
    }


# --------------------------------------------------------------------------- scheduled reaper


def schedule_reaper_run() -> dict[str, Any]:
    """What an EventBridge Scheduler schedule (SAM `ScheduleV2`) without `Input` delivers to its
    Lambda target: the scheduler's default notification. The reaper ignores its content."""
    return {
        "version": "0",
        "id": fake_uuid("schedule/reaper-run"),
        "detail-type": "Scheduled Event",
        "source": "aws.scheduler",
        "account": ACCOUNT,
        "time": "2024-11-22T12:05:00Z",
        "region": REGION,
        "resources": [REAPER_SCHEDULE_ARN],
        "detail": "{}",
    }


# --------------------------------------------------------------------------- output

EVENTS = {
    "sqs-order-single.json": sqs_order_single,
    "sqs-order-batch-duplicates.json": sqs_order_batch_duplicates,
    "sqs-order-poison.json": sqs_order_poison,
    "sqs-order-fifo.json": sqs_order_fifo,
    "sqs-order-insufficient-stock.json": sqs_order_insufficient_stock,
    "msk-payment-single.json": msk_payment_single,
    "msk-payment-multi-partition.json": msk_payment_multi_partition,
    "msk-payment-poison.json": msk_payment_poison,
    "msk-payment-hot-customer.json": msk_payment_hot_customer,
    "sqs-payment-replay.json": sqs_payment_replay,
    "sqs-notification-single.json": sqs_notification_single,
    "sqs-notification-batch-duplicates.json": sqs_notification_batch_duplicates,
    "sqs-notification-poison.json": sqs_notification_poison,
    "schedule-reaper-run.json": schedule_reaper_run,
}

_INT_LIST = re.compile(r"\[\n\s+(-?\d+(?:,\n\s+-?\d+)*)\n\s*\]")


def render(event: dict[str, Any]) -> str:
    """Two-space indented JSON; lists of ints (Kafka header bytes) are kept on one line."""
    text = json.dumps(event, indent=2)
    text = _INT_LIST.sub(lambda m: "[" + ", ".join(re.split(r",\s+", m.group(1))) + "]", text)
    return text + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    stale = []
    for name, build in EVENTS.items():
        path = HERE / name
        text = render(build())
        assert json.loads(text) == build()
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
