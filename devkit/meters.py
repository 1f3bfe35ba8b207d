"""Counting the AWS requests botocore clients make, at botocore's own hooks (below the code under
test, which is left unchanged).

`RequestMeter` records one entry per API call (`before-call`: SDK retries of a call are not
separate entries), counts the HTTP sends (`before-send`: retries included), adds up the time
spent inside calls and the `CancellationReasons` codes of cancelled transactions
(`after-call`). It only observes: requests and answers are not changed.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

WRITE_OPERATIONS = frozenset(
    {"TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"}
)
_STARTED = "devkit_meter_started"


@dataclass(frozen=True)
class Request:
    """One API call: its service ("dynamodb"), operation ("TransactWriteItems") and request
    parameters as sent (the decoded JSON body: attribute values in wire format)."""

    service: str
    operation: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Tally:
    """What a meter counted over a stretch of time (see `RequestMeter.tally`)."""

    calls: Counter[str] = field(default_factory=Counter)
    sends: int = 0
    seconds: float = 0.0

    @property
    def requests(self) -> int:
        """API calls of every operation."""
        return sum(self.calls.values())

    @property
    def writes(self) -> int:
        """API calls of DynamoDB write operations."""
        return sum(n for operation, n in self.calls.items() if operation in WRITE_OPERATIONS)


class RequestMeter:
    """The requests of every client (or session) it is attached to; thread-safe."""

    def __init__(self, *clients: Any) -> None:
        self.requests: list[Request] = []
        self.sends = 0
        self.seconds = 0.0
        self.cancellation_codes: Counter[str] = Counter()
        self._lock = threading.Lock()
        for client in clients:
            self.attach(client)

    def attach(self, client: Any) -> RequestMeter:
        """Meter a botocore client from now on."""
        self._register(client.meta.events)
        return self

    def attach_to_session(self, session: Any) -> RequestMeter:
        """Meter every client a boto3 session creates from now on (clients it already made are
        not metered): e.g. `boto3.DEFAULT_SESSION` before the functions are imported."""
        self._register(session.events)
        return self

    def detach(self, client: Any) -> RequestMeter:
        """Stop metering a client (e.g. while its CPU time is measured: the meter decodes every
        request body, which is the meter's cost, not the client's)."""
        events = client.meta.events
        events.unregister("before-call", self._on_call)
        events.unregister("before-send", self._on_send)
        events.unregister("after-call", self._on_answer)
        return self

    def _register(self, events: Any) -> None:
        events.register("before-call", self._on_call)
        events.register("before-send", self._on_send)
        events.register("after-call", self._on_answer)

    def _on_call(
        self, model: Any, params: Mapping[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        body = params.get("body")
        if isinstance(body, bytes | str):
            decoded: dict[str, Any] = json.loads(body or b"{}")
        else:
            decoded = dict(body or {})
        request = Request(model.service_model.service_name, model.name, decoded)
        context[_STARTED] = time.perf_counter()
        with self._lock:
            self.requests.append(request)

    def _on_send(self, **_: Any) -> None:
        with self._lock:
            self.sends += 1

    def _on_answer(self, parsed: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        started = context.get(_STARTED)
        reasons = parsed.get("CancellationReasons") or []
        with self._lock:
            if started is not None:
                self.seconds += time.perf_counter() - started
            self.cancellation_codes.update(str(reason.get("Code")) for reason in reasons)

    # ---- reading -------------------------------------------------------------------------

    def operations(self, service: str | None = None) -> list[str]:
        """The operations called (of `service`, or all), in order."""
        with self._lock:
            return [r.operation for r in self.requests if service in (None, r.service)]

    def counts(self, service: str | None = None) -> Counter[str]:
        """Calls per operation (of `service`, or all)."""
        return Counter(self.operations(service))

    def bodies(self, operation: str) -> list[dict[str, Any]]:
        """The parameters of every call of `operation`, in order."""
        with self._lock:
            return [r.params for r in self.requests if r.operation == operation]

    @property
    def transactions(self) -> list[dict[str, Any]]:
        """The parameters of every `TransactWriteItems` call."""
        return self.bodies("TransactWriteItems")

    @property
    def tokens(self) -> list[str]:
        """The `ClientRequestToken` of every `TransactWriteItems` call."""
        return [str(call["ClientRequestToken"]) for call in self.transactions]

    @property
    def sizes(self) -> list[int]:
        """The number of actions of every `TransactWriteItems` call."""
        return [len(call["TransactItems"]) for call in self.transactions]

    def tally(self) -> Tally:
        """A snapshot of the calls per operation, the HTTP sends and the seconds in calls."""
        with self._lock:
            calls = Counter(r.operation for r in self.requests)
            return Tally(calls, self.sends, self.seconds)

    def clear(self) -> None:
        """Forget everything counted so far."""
        with self._lock:
            self.requests.clear()
            self.sends = 0
            self.seconds = 0.0
            self.cancellation_codes.clear()


def touched_items(transaction: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(TableName, key as JSON) of every action of one `TransactWriteItems` request."""
    touched: list[tuple[str, str]] = []
    for item in transaction["TransactItems"]:
        ((kind, action),) = item.items()
        if kind == "Put":
            key = {name: action["Item"][name] for name in ("pk", "sk") if name in action["Item"]}
        else:
            key = action["Key"]
        touched.append((action["TableName"], json.dumps(key, sort_keys=True)))
    return touched


def assert_no_item_twice_per_transaction(meter: RequestMeter) -> None:
    """Some `TransactWriteItems` was sent, and none touched an item twice (DynamoDB refuses
    that with a ValidationException)."""
    transactions = meter.transactions
    assert transactions, "no TransactWriteItems was sent"
    for transaction in transactions:
        counts = Counter(touched_items(transaction))
        repeated = [item for item, count in counts.items() if count > 1]
        assert not repeated, f"one TransactWriteItems touched items twice: {repeated}"


# ---- write units by DynamoDB's pricing rules


def _units(item: dict[str, Any] | None) -> int:
    # Here, not at the top: the benchmarks load this module beside other versions of the
    # library (`--library`), which need not have it.
    from lambda_inbox.store import item_size

    return max(1, math.ceil(item_size(item or {}) / 1024))


def computed_wcu(operation: str, params: dict[str, Any]) -> float:
    """WCU by DynamoDB's rules: 1 per KB for a standard write (a write whose condition fails is
    still charged), 2 per KB per action of TransactWriteItems; reads cost no WCU."""
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        return float(_units(params.get("Item") or params.get("Key")))
    if operation == "BatchWriteItem":
        requests = [r for rs in params.get("RequestItems", {}).values() for r in rs]
        return float(sum(_units(next(iter(r.values())).get("Item")) for r in requests))
    if operation == "TransactWriteItems":
        total = 0
        for action in params.get("TransactItems", []):
            body = next(iter(action.values()))
            total += 2 * _units(body.get("Item") or body.get("Key"))
        return float(total)
    return 0.0
