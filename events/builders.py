"""The pieces of the sample events (`generate.py`): fixed ARNs and ids, deterministic uuids and
receipt handles, SQS and MSK records, and the example application's payloads."""

from __future__ import annotations

import base64
import hashlib
import json
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
