"""The sample events of this directory, one function each (`generate.py` writes them)."""

from __future__ import annotations

import hashlib
from typing import Any

from builders import (
    ACCOUNT,
    BASE_MS,
    FUNCTION_SENDER_ID,
    NOTIFICATION_QUEUE_ARN,
    OPERATOR_SENDER_ID,
    ORDER_FIFO_QUEUE_ARN,
    ORDER_QUEUE_ARN,
    PAYMENT_REPLAY_QUEUE_ARN,
    PRICES,
    REAPER_SCHEDULE_ARN,
    REGION,
    TOPIC,
    binary_attr,
    compact,
    fake_uuid,
    header,
    json_value,
    kafka_record,
    msk_event,
    order,
    payment,
    sqs_record,
    string_attr,
)

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


# --------------------------------------------------------------------------- DynamoDB stream (outbox)

DOMAIN_STREAM_ARN = (
    f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/lambda-inbox-DomainTable/stream/"
    "2024-11-21T12:00:00.000"
)


def outbox_image(order_no: int, customer: str, event_id: str) -> dict[str, Any]:
    """The NEW_IMAGE of the outbox item order-events writes when ord-{order_no} ships."""
    body = {
        "event_id": event_id,
        "customer_id": customer,
        "order_id": f"ord-{order_no}",
        "template": "order_shipped",
    }
    created = BASE_MS // 1000 + 60
    return {
        "pk": {"S": f"OUTBOX#{event_id}"},
        "sk": {"S": f"OUTBOX#{event_id}"},
        "outbox_message_id": {"S": event_id},
        "outbox_destination": {"S": "notifications"},
        "outbox_body": {"S": compact(body)},
        "outbox_created_at": {"N": str(created)},
        "expires_at": {"N": str(created + 7 * 24 * 3600)},
    }


def stream_record(n: int, name: str, image: dict[str, Any], *, old: bool = False) -> dict[str, Any]:
    keys = {"pk": image["pk"], "sk": image["sk"]}
    change: dict[str, Any] = {
        "ApproximateCreationDateTime": BASE_MS // 1000 + 60 + n,
        "Keys": keys,
        "SequenceNumber": f"{4000000000000000000000 + n * 100}",
        "SizeBytes": 300 + n,
        "StreamViewType": "NEW_IMAGE",
    }
    if not old:
        change["NewImage"] = image
    record: dict[str, Any] = {
        "eventID": fake_uuid(f"outbox-stream-{n}").replace("-", ""),
        "eventName": name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": REGION,
        "dynamodb": change,
        "eventSourceARN": DOMAIN_STREAM_ARN,
    }
    if name == "REMOVE":  # deleted by TTL
        record["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    return record


def ddb_outbox_notifications() -> dict[str, Any]:
    # Three shipped orders' notification requests; an update and a TTL removal the relay ignores.
    first = outbox_image(1001, "cust-001", fake_uuid("order_shipped:ord-1001"))
    second = outbox_image(1002, "cust-002", fake_uuid("order_shipped:ord-1002"))
    third = outbox_image(1003, "cust-001", fake_uuid("order_shipped:ord-1003"))
    return {
        "Records": [
            stream_record(1, "INSERT", first),
            stream_record(2, "INSERT", second),
            stream_record(3, "MODIFY", first),
            stream_record(4, "REMOVE", outbox_image(900, "cust-009", "expired"), old=True),
            stream_record(5, "INSERT", third),
        ]
    }
