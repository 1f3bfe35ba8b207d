"""Redelivering what a payment-events response reports, counting requests.

The MSK event builders are in `devkit.events`.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any


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
