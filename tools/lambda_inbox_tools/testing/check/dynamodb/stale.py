"""Eventually consistent reads, served as DynamoDB may serve them: the answer to a `GetItem`,
`BatchGetItem` or `Query` without `ConsistentRead` "may not reflect the results of a recently
completed write operation", and a read repeated "after a short time" returns the more recent
item (the DynamoDB Developer Guide's "DynamoDB read consistency"); the check takes that time to
be a second. DynamoDB Local, moto and devkit's memory DynamoDB always answer with the latest
write.

While the handler runs (`begin` / `end`), `StaleReads` answers such a read of an item written
less than a second before, on the check's clock, with the item as it was before that write, the
first time it is read after the write (later reads find the copy caught up): absent if the write
created it, else the version the check last saw read. The first read after each write is the
one that hurts a consumer that reads, then writes without a condition (a duplicate delivered
right after the commit reads "not processed"). An item whose earlier version the check never saw
is answered as it is; so is an item a `Query` no longer finds (deleted).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ...crashes import WRITE_OPERATIONS
from ..clock import CheckClock

__all__ = ["WINDOW_SECONDS", "StaleReads"]

#: How long a write may be missing from an eventually consistent read.
WINDOW_SECONDS = 1.0
_READS = ("GetItem", "BatchGetItem", "Query")
#: Where the hooks keep a call's parameters in botocore's request context.
_PARAMS = "lambda_inbox_stale_params"
#: An item's earlier version the check never saw.
_UNKNOWN = object()

Key = tuple[str, str, str]


@dataclass
class _Window:
    """A write's window: when it happened, the item before it, whether a read was served."""

    at: float
    before: Any
    served: bool = False


class StaleReads:
    """Hooks on `clients` (until `remove()`), serving stale reads while a handler runs."""

    def __init__(self, clients: Iterable[Any], clock: CheckClock) -> None:
        self.clock = clock
        #: Reads answered stale.
        self.served = 0
        self._lock = threading.Lock()
        self._running = 0
        #: (table, key) -> the item the last read saw (None: absent) since its last write.
        self._seen: dict[Key, Any] = {}
        self._windows: dict[Key, _Window] = {}
        self._key_names: dict[str, list[str]] = {}
        self._hooks: list[tuple[Any, str, Any]] = []
        for client in clients:  # the service's events, each call's operation read from its model
            self._hook(client, "before-parameter-build.dynamodb", _keep)
            self._hook(client, "before-call.dynamodb", self._wrote(client))
            self._hook(client, "after-call.dynamodb", self._read(client))

    def _hook(self, client: Any, event: str, handler: Any) -> None:
        """First among the service's hooks (before devkit's memory DynamoDB answers)."""
        client.meta.events.register_first(event, handler)
        self._hooks.append((client, event, handler))

    def remove(self) -> None:
        for client, event, handler in self._hooks:
            client.meta.events.unregister(event, handler)

    def begin(self) -> None:
        """A handler's invocation starts (overlapping ones count)."""
        with self._lock:
            self._running += 1

    def end(self) -> None:
        with self._lock:
            self._running -= 1

    # ---- writes open windows

    def _wrote(self, client: Any) -> Any:
        def hook(context: Any = None, model: Any = None, **_: Any) -> None:
            params = context.get(_PARAMS) if isinstance(context, dict) else None
            if not isinstance(params, dict) or getattr(model, "name", "") not in WRITE_OPERATIONS:
                return
            now = self.clock()
            for key in self._written(client, params):
                with self._lock:
                    self._windows[key] = _Window(now, self._seen.pop(key, _UNKNOWN))

        return hook

    def _written(self, client: Any, params: Mapping[str, Any]) -> Iterator[Key]:
        """The (table, key) of every item a write's parameters touch."""
        if "TableName" in params:
            table = str(params["TableName"])
            yield self._key(client, table, params.get("Key") or params.get("Item") or {})
        for table, requests in (params.get("RequestItems") or {}).items():
            for request in requests:
                for change in request.values():
                    yield self._key(client, table, change.get("Key") or change.get("Item") or {})
        for action in params.get("TransactItems") or []:
            for change in action.values():
                item = change.get("Key") or change.get("Item") or {}
                yield self._key(client, str(change["TableName"]), item)

    # ---- reads record what they saw, and may be answered stale

    def _read(self, client: Any) -> Any:
        def hook(parsed: Any = None, context: Any = None, model: Any = None, **_: Any) -> None:
            params = context.get(_PARAMS) if isinstance(context, dict) else None
            if not isinstance(params, dict) or not isinstance(parsed, dict) or "Error" in parsed:
                return
            operation = getattr(model, "name", "")
            if operation == "GetItem":
                self._answer(client, params, params.get("ConsistentRead"), parsed)
            elif operation == "BatchGetItem":
                responses = parsed.get("Responses") or {}
                for table, request in (params.get("RequestItems") or {}).items():
                    answer = {"Items": responses.get(table, [])}
                    self._answer_many(client, table, request, answer, keys=request.get("Keys"))
                    responses[table] = answer["Items"]
            elif operation == "Query" and params.get("ConsistentRead") is not True:
                self._answer_many(client, str(params["TableName"]), params, parsed, keys=None)

        return hook

    def _answer(self, client: Any, params: Mapping[str, Any], consistent: Any, parsed: Any) -> None:
        table = str(params["TableName"])
        key = self._key(client, table, params.get("Key") or {})
        found = parsed.get("Item")
        stale = self._stale(key, found, consistent is True)
        if stale is not _UNKNOWN:
            parsed.pop("Item", None)
            if stale is not None:
                parsed["Item"] = stale

    def _answer_many(
        self,
        client: Any,
        table: str,
        request: Mapping[str, Any],
        parsed: dict[str, Any],
        *,
        keys: list[Any] | None,
    ) -> None:
        consistent = request.get("ConsistentRead") is True
        found = {self._key(client, table, item): item for item in parsed.get("Items") or []}
        asked = [self._key(client, table, k) for k in keys] if keys is not None else list(found)
        items = []
        for key in asked:
            stale = self._stale(key, found.get(key), consistent)
            item = found.get(key) if stale is _UNKNOWN else stale
            if item is not None:
                items.append(item)
        if items != list(found.values()):
            parsed["Items"] = items
            if "Count" in parsed:
                parsed["Count"] = len(items)

    def _stale(self, key: Key, found: Any, consistent: bool) -> Any:
        """The stale version to answer for `key` (None: absent; `_UNKNOWN`: the true one), the
        true one (`found`) noted as seen."""
        with self._lock:
            window = self._windows.get(key)
            self._seen[key] = found
            if consistent or self._running <= 0 or window is None or window.served:
                return _UNKNOWN
            if window.before is _UNKNOWN or self.clock() - window.at >= WINDOW_SECONDS:
                return _UNKNOWN
            window.served = True
            if window.before == found:
                return _UNKNOWN
            self.served += 1
            return window.before

    def _key(self, client: Any, table: str, item: Mapping[str, Any]) -> Key:
        if table not in self._key_names:
            schema = client.describe_table(TableName=table)["Table"]["KeySchema"]
            self._key_names[table] = [str(key["AttributeName"]) for key in schema]
        values = [
            json.dumps(item.get(name), sort_keys=True, default=str)
            for name in self._key_names[table]
        ]
        return (table, values[0], values[1] if len(values) > 1 else "")


def _keep(params: Any = None, context: Any = None, model: Any = None, **_: Any) -> None:
    """Keeps a write's or a read's parameters in its request context, for the hooks after it."""
    if isinstance(context, dict) and getattr(model, "name", "") in (*WRITE_OPERATIONS, *_READS):
        context[_PARAMS] = params
