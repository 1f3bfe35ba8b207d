"""What goes wrong around a DynamoDB write in Lambda, injected at any write of an invocation:
the runtime dying just before or just after the write reaches DynamoDB, and the write failing
after the SDK's own retries.

`CrashSwitch(clients)` hooks every DynamoDB write of the given botocore clients
(`TransactWriteItems`, `PutItem`, `UpdateItem`, `DeleteItem`, `BatchWriteItem`) and counts them
per invocation (`start()`, then `writes`). Armed with `arm(kind, nth)`, the `nth` write from
then on:

- `"before"`: raises `InjectedCrash` before it is sent (nothing written);
- `"after"`: raises `InjectedCrash` after DynamoDB answered (written, the answer never used);
- `"error"`: raises botocore's modelled `ProvisionedThroughputExceededException` before it is
  sent, as the SDK does once its retries are spent; the handler sees an ordinary error;
- `"dynamodb"`: DynamoDB's own failure of that write, as the service answers it
  (`check.dynamodb_answers`: a transaction cancelled for `TransactionConflict` or `ThrottlingError`,
  `TransactionConflictException`, a batch write partly unprocessed), drawn with the switch's
  `rng`; `answered` names each.

Like a killed execution environment, a crash is a `BaseException`: no `except Exception` in the
handler absorbs it, and the invocation ends with no response.

`uncovered_writes(clients)` watches every botocore client of the process while it is active and
stops a DynamoDB write made through any other client with `UncoveredWrite`: a write the switch
cannot fail is a write the check cannot prove anything about.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from botocore.client import BaseClient

from ..local.invoker import InjectedCrash
from .check.dynamodb_answers import answer_for

__all__ = [
    "WRITE_OPERATIONS",
    "CrashSwitch",
    "InjectedCrash",
    "UncoveredWrite",
    "When",
    "uncovered_writes",
]

#: The DynamoDB operations that commit something.
WRITE_OPERATIONS = ("TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")
When = Literal["before", "after", "error", "dynamodb"]
#: What an injected write error says (a code every SDK retries, then gives up on).
ERROR_CODE = "ProvisionedThroughputExceededException"


class UncoveredWrite(BaseException):
    """A DynamoDB write through a client the check was not given (see `uncovered_writes`)."""


class CrashSwitch:
    """Faults armed one at a time on the DynamoDB writes of `clients` (see the module)."""

    def __init__(self, clients: Iterable[Any], rng: random.Random | None = None) -> None:
        self._lock = threading.Lock()
        # Seeded: which DynamoDB failure a "dynamodb" fault answers, reproducibly (B311).
        self._rng = rng or random.Random(0)  # nosec B311
        #: The requests of a batch write left unprocessed, for its `after-call` (per thread).
        self._unprocessed = threading.local()
        self._armed: tuple[When, int] | None = None
        self._seen = 0
        #: DynamoDB writes since `start()` (counted whether armed or not).
        self.writes = 0
        self.fired: list[str] = []
        self._hooked: list[tuple[Any, str, str]] = []
        #: The event systems of the hooked clients (a client and its wrappers share one).
        self.covered: set[int] = set()
        #: The DynamoDB clients hooked.
        self.clients: list[Any] = []
        for client in clients:
            if client.meta.service_model.service_name != "dynamodb":
                continue
            self.covered.add(id(client.meta.events))
            self.clients.append(client)
            for operation in WRITE_OPERATIONS:
                for when in ("before", "after"):
                    event = f"{when}-call.dynamodb.{operation}"
                    unique = f"lambda-inbox-crash-{id(self)}-{event}"
                    client.meta.events.register(event, self._hook(when, client), unique_id=unique)
                    self._hooked.append((client, event, unique))
        if not self._hooked:
            raise ValueError("no DynamoDB client to crash on: pass the clients the handler uses")

    def start(self) -> None:
        """A new invocation: count its writes from zero."""
        with self._lock:
            self.writes = 0

    def arm(self, when: When, nth: int = 1) -> None:
        """`when` at the `nth` DynamoDB write made from now on."""
        with self._lock:
            self._armed, self._seen = (when, nth), 0

    def disarm(self) -> bool:
        """Disarm; True when the armed fault fired."""
        with self._lock:
            fired, self._armed = self._armed is None, None
            return fired

    def remove(self) -> None:
        """Unhook every client."""
        for client, event, unique in self._hooked:
            client.meta.events.unregister(event, unique_id=unique)
        self._hooked.clear()

    def _hook(self, when: str, client: Any) -> Any:
        def hook(model: Any = None, params: Any = None, parsed: Any = None, **_: Any) -> Any:
            name = getattr(model, "name", "a write")
            if when == "after":
                self._add_unprocessed(parsed)
            with self._lock:
                if when == "before":
                    self.writes += 1
                if self._armed is None:
                    return None
                armed_when, nth = self._armed
                if when == "before":
                    self._seen += 1
                fires_now = "after" if armed_when == "after" else "before"
                if fires_now != when or self._seen != nth:
                    return None
                self._armed = None
                answer = (
                    answer_for(client, model, params, self._rng)
                    if armed_when == "dynamodb"
                    else None
                )
                self.fired.append(f"{armed_when} {answer.name if answer else name}")
            if answer is not None:
                if answer.body is not None:
                    params["body"] = answer.body
                self._unprocessed.items = answer.unprocessed
                return answer.response
            if armed_when in ("error", "dynamodb"):
                error_class = client.exceptions.from_code(ERROR_CODE)
                raise error_class(
                    {
                        "Error": {
                            "Code": ERROR_CODE,
                            "Message": f"injected: write #{nth} of the invocation failed "
                            "after the SDK's retries",
                        },
                        "ResponseMetadata": {"HTTPStatusCode": 400},
                    },
                    name,
                )
            raise InjectedCrash(f"crashed {when} {name} (write #{nth} of the invocation)")

        return hook

    def _add_unprocessed(self, parsed: Any) -> None:
        unprocessed = getattr(self._unprocessed, "items", None)
        self._unprocessed.items = None
        if unprocessed and isinstance(parsed, dict):
            merged = parsed.setdefault("UnprocessedItems", {})
            for table, requests in unprocessed.items():
                merged.setdefault(table, []).extend(requests)

    @property
    def answered(self) -> list[str]:
        """The DynamoDB failures the "dynamodb" faults answered, by name."""
        return [f.split(" ", 1)[1] for f in self.fired if f.startswith("dynamodb ")]


@contextlib.contextmanager
def uncovered_writes(covered: set[int]) -> Iterator[None]:
    """While active, a DynamoDB write through a client whose event system is not in `covered`
    raises `UncoveredWrite` instead of being sent (every client of the process is watched)."""
    client_class: Any = BaseClient  # botocore's stubs do not declare _make_api_call
    original = client_class._make_api_call

    def watched(client: Any, operation_name: str, api_params: Any) -> Any:
        if (
            operation_name in WRITE_OPERATIONS
            and client.meta.service_model.service_name == "dynamodb"
            and id(client.meta.events) not in covered
        ):
            raise UncoveredWrite(
                f"the handler wrote to DynamoDB ({operation_name}) through a client the check "
                "was not given, so it cannot crash or fail that write: pass the clients the "
                "handler writes through as clients=[...] (a LocalFunction's own are found by "
                "themselves: a client made inside the handler is not)"
            )
        return original(client, operation_name, api_params)

    client_class._make_api_call = watched
    try:
        yield
    finally:
        client_class._make_api_call = original
