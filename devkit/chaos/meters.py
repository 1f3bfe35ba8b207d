"""What the chaos run counts: requests, sends and write units per workload, crashes, throttles
and conflicts."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .workload import WORKLOADS

# ----------------------------------------------------------------------- meters and faults


@dataclass
class Stats:
    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    sends: Counter[str] = field(default_factory=Counter)
    wcu: Counter[str] = field(default_factory=Counter)
    wcu_cancelled: Counter[str] = field(default_factory=Counter)
    rcu_halves: Counter[str] = field(default_factory=Counter)  # RCU x 2, by workload
    crashes: Counter[str] = field(default_factory=Counter)
    throttles: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)  # CancellationReasons codes
    cancelled_transactions: int = 0
    injected_conflicts: int = 0
    conflict_transactions: int = 0
    invocations: Counter[str] = field(default_factory=Counter)
    deliveries: Counter[str] = field(default_factory=Counter)
    failures_reported: Counter[str] = field(default_factory=Counter)
    batch_seconds: dict[str, list[float]] = field(
        default_factory=lambda: {w: [] for w in WORKLOADS}
    )

    def merge(self, other: Stats) -> None:
        for name in (
            "requests", "sends", "wcu", "wcu_cancelled", "rcu_halves", "crashes", "throttles",
            "reasons", "invocations", "deliveries", "failures_reported",
        ):  # fmt: skip
            getattr(self, name).update(getattr(other, name))
        self.cancelled_transactions += other.cancelled_transactions
        self.injected_conflicts += other.injected_conflicts
        self.conflict_transactions += other.conflict_transactions
        for workload, values in other.batch_seconds.items():
            self.batch_seconds[workload].extend(values)


def attribute_bytes(value: Mapping[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind in ("S", "B"):
        return len(str(inner).encode("utf-8"))
    if kind == "N":
        return 1 + math.ceil(len(str(inner).lstrip("-").replace(".", "")) / 2)
    if kind == "M":
        return 3 + sum(len(k.encode()) + 1 + attribute_bytes(v) for k, v in inner.items())
    if kind == "L":
        return 3 + sum(1 + attribute_bytes(v) for v in inner)
    if kind in ("SS", "NS", "BS"):
        return sum(len(str(v)) for v in inner)
    return 1  # BOOL, NULL


def item_kb(item: Mapping[str, Any]) -> int:
    size = sum(len(name.encode()) + attribute_bytes(value) for name, value in item.items())
    return max(1, math.ceil(size / 1024))


def write_units(operation: str, params: Mapping[str, Any]) -> int:
    """WCU as docs/PERFORMANCE.md computes them: 2 per KB per transaction action (a
    ConditionCheck too), 1 per KB per standard write; updates counted as 1 KB (small items)."""
    if operation == "TransactWriteItems":
        units = 0
        for action in params.get("TransactItems", []):
            put = action.get("Put")
            units += 2 * (item_kb(put["Item"]) if put else 1)
        return units
    if operation == "PutItem":
        return item_kb(params.get("Item", {}))
    if operation in ("UpdateItem", "DeleteItem"):
        return 1
    return 0


def read_half_units(operation: str, params: Mapping[str, Any]) -> int:
    """RCU x 2: 0.5 per key of an eventually consistent BatchGetItem (items under 4 KB), 1 per
    strongly consistent GetItem."""
    if operation == "BatchGetItem":
        return sum(len(v.get("Keys", [])) for v in params.get("RequestItems", {}).values())
    if operation == "GetItem":
        return 2 if params.get("ConsistentRead") else 1
    return 0
