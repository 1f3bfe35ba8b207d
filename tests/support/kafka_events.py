"""MSK (Kafka) events for payment-events: `PaymentCaptured` bodies, records, whole events."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any


def payment(
    n: int, customer: str = "cust-001", amount: int = 100, payment_id: str | None = None
) -> dict[str, Any]:
    return {
        "event_id": f"evt-{n}",
        "payment_id": payment_id or f"pay-{n}",
        "order_id": f"ord-{n}",
        "customer_id": customer,
        "amount_cents": amount,
    }


def record(
    partition: int,
    offset: int,
    value: Mapping[str, Any] | bytes | None,
    *,
    key: bytes | None = None,
    headers: Mapping[str, bytes] | None = None,
    topic: str = "payments",
) -> dict[str, Any]:
    """One record in the shape the MSK event source delivers (base64 key/value, byte-list headers)."""
    raw: dict[str, Any] = {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "timestamp": 1732190760000 + offset,
        "timestampType": "CREATE_TIME",
        "headers": [{name: list(data)} for name, data in (headers or {}).items()],
    }
    if isinstance(value, Mapping):
        value = json.dumps(dict(value), separators=(",", ":")).encode("utf-8")
    if value is not None:
        raw["value"] = base64.b64encode(value).decode("ascii")
    if key is not None:
        raw["key"] = base64.b64encode(key).decode("ascii")
    return raw


def kafka_event(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """An MSK event: records grouped by `topic-partition`, each partition in offset order."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for raw in records:
        grouped.setdefault(f"{raw['topic']}-{raw['partition']}", []).append(raw)
    for partition_records in grouped.values():
        partition_records.sort(key=lambda raw: int(raw["offset"]))
    return {
        "eventSource": "aws:kafka",
        "eventSourceArn": "arn:aws:kafka:us-east-1:123456789012:cluster/payments/test",
        "records": grouped,
    }
