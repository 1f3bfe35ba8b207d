"""Building MSK events for payment-events, redelivering what a response reports, counting requests."""

from __future__ import annotations

import base64
import json
import threading
from collections import Counter
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


def records_of(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [raw for partition in event["records"].values() for raw in partition]


def failures(response: Mapping[str, Any]) -> list[tuple[str, int]]:
    return [
        (item["itemIdentifier"]["topic-partition"], int(item["itemIdentifier"]["offset"]))
        for item in response["batchItemFailures"]
    ]


def redelivery(event: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any] | None:
    """What Lambda delivers next: per reported partition, every record from the first reported
    offset on. None when nothing was reported."""
    first_failed: dict[str, int] = {}
    for partition, offset in failures(response):
        first_failed[partition] = min(offset, first_failed.get(partition, offset))
    if not first_failed:
        return None
    return {
        **event,
        "records": {
            partition: [raw for raw in records if int(raw["offset"]) >= first_failed[partition]]
            for partition, records in event["records"].items()
            if partition in first_failed
        },
    }


class RequestLog:
    """Every DynamoDB request a client makes (operation name + JSON body), via `before-call`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def attach(self, client: Any) -> RequestLog:
        client.meta.events.register("before-call.dynamodb", self._record)
        return self

    def _record(self, model: Any, params: Mapping[str, Any], **_: Any) -> None:
        body = params.get("body") or b"{}"
        with self._lock:
            self.calls.append((model.name, json.loads(body)))

    def counts(self) -> Counter[str]:
        return Counter(name for name, _ in self.calls)

    def transactions(self) -> list[dict[str, Any]]:
        return [body for name, body in self.calls if name == "TransactWriteItems"]

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()


def touched_items(transaction: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(TableName, key) of every action of one TransactWriteItems request."""
    touched: list[tuple[str, str]] = []
    for item in transaction["TransactItems"]:
        ((kind, action),) = item.items()
        if kind == "Put":
            key = {name: action["Item"][name] for name in ("pk", "sk") if name in action["Item"]}
        else:
            key = action["Key"]
        touched.append((action["TableName"], json.dumps(key, sort_keys=True)))
    return touched


def assert_no_item_twice_per_transaction(log: RequestLog) -> None:
    transactions = log.transactions()
    assert transactions, "no TransactWriteItems was sent"
    for transaction in transactions:
        touched = touched_items(transaction)
        repeated = [item for item, count in Counter(touched).items() if count > 1]
        assert not repeated, f"one TransactWriteItems touched items twice: {repeated}"
