"""The Lambda runtime dying in the middle of an invocation, just before or just after a write
reaches DynamoDB: the crash the effectively-once check injects.

`CrashSwitch(clients)` hooks every DynamoDB write of the given botocore clients
(`TransactWriteItems`, `PutItem`, `UpdateItem`, `DeleteItem`, `BatchWriteItem`). Armed with
`arm("before" | "after", nth)`, the `nth` write from then on raises `InjectedCrash` before it is
sent (nothing written) or after DynamoDB answered (written, the answer never used). Like a killed
execution environment, the crash is a `BaseException`: no `except Exception` in the handler
absorbs it, and the invocation ends with no response.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Literal

from ..local.invoker import InjectedCrash

__all__ = ["WRITE_OPERATIONS", "CrashSwitch", "InjectedCrash", "When"]

#: The DynamoDB operations that commit something.
WRITE_OPERATIONS = ("TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")
When = Literal["before", "after"]


class CrashSwitch:
    """Crashes armed one at a time on the DynamoDB writes of `clients` (see the module)."""

    def __init__(self, clients: Iterable[Any]) -> None:
        self._lock = threading.Lock()
        self._armed: tuple[When, int] | None = None
        self._seen = 0
        self.fired: list[str] = []
        self._hooked: list[tuple[Any, str, str]] = []
        for client in clients:
            if client.meta.service_model.service_name != "dynamodb":
                continue
            for operation in WRITE_OPERATIONS:
                for when in ("before", "after"):
                    event = f"{when}-call.dynamodb.{operation}"
                    unique = f"lambda-inbox-crash-{id(self)}-{event}"
                    client.meta.events.register(event, self._hook(when), unique_id=unique)
                    self._hooked.append((client, event, unique))
        if not self._hooked:
            raise ValueError("no DynamoDB client to crash on: pass the clients the handler uses")

    def arm(self, when: When, nth: int = 1) -> None:
        """Crash `when` the `nth` DynamoDB write made from now on."""
        with self._lock:
            self._armed, self._seen = (when, nth), 0

    def disarm(self) -> bool:
        """Disarm; True when the armed crash fired."""
        with self._lock:
            fired, self._armed = self._armed is None, None
            return fired

    def remove(self) -> None:
        """Unhook every client."""
        for client, event, unique in self._hooked:
            client.meta.events.unregister(event, unique_id=unique)
        self._hooked.clear()

    def _hook(self, when: str) -> Any:
        def hook(model: Any = None, **_: Any) -> None:
            with self._lock:
                if self._armed is None:
                    return
                armed_when, nth = self._armed
                if when == "before":
                    self._seen += 1
                if armed_when != when or self._seen != nth:
                    return
                self._armed = None
                name = getattr(model, "name", "a write")
                self.fired.append(f"{when} {name}")
            raise InjectedCrash(f"crashed {when} {name} (write #{nth} of the invocation)")

        return hook
