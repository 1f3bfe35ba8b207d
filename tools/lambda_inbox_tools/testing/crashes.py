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
  (`check.dynamodb.answers`: a transaction cancelled for `TransactionConflict` or `ThrottlingError`,
  `TransactionConflictException`, a batch write partly unprocessed), drawn with the switch's
  `rng`; `answered` names each;
- `"lost"`: the write reaches DynamoDB and its answer is lost on the way back, so the SDK sends
  the same request again (its retry, with the same `ClientRequestToken` a transaction carries)
  and the handler sees what DynamoDB answers that one: a write applied twice, a conditional
  write's `ConditionalCheckFailedException` for its own first attempt, or the same answer for
  an idempotent one.

Like a killed execution environment, a crash is a `BaseException`: no `except Exception` in the
handler absorbs it, and the invocation ends with no response.

`uncovered_writes(clients)` watches every botocore client of the process while it is active and
stops a DynamoDB write made through any other client with `UncoveredWrite`: a write the switch
cannot fail is a write the check cannot prove anything about.
"""

from __future__ import annotations

import contextlib
import copy
import random
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from botocore.client import BaseClient

from ..local.invoker import InjectedCrash
from .check.dynamodb.answers import answer_for

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
When = Literal["before", "after", "error", "dynamodb", "lost"]
#: What an injected write error says (a code every SDK retries, then gives up on).
ERROR_CODE = "ProvisionedThroughputExceededException"
#: Where the switch keeps a write's parameters in botocore's request context, for its retry.
_PARAMS = "lambda_inbox_crash_params"


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
        #: The writes of the calling thread since its `start_mine()`.
        self._mine = threading.local()
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
            # On the service's events, first among its hooks (before devkit's memory DynamoDB
            # answers), each call's operation read from its model: a hook per operation costs a
            # registration each, which botocore inspects.
            hooks = (
                ("before-parameter-build.dynamodb", _keep_params),
                ("before-call.dynamodb", self._hook("before", client)),
                ("after-call.dynamodb", self._hook("after", client)),
            )
            for event, hook in hooks:
                unique = f"lambda-inbox-crash-{id(self)}-{event}"
                client.meta.events.register_first(event, hook, unique_id=unique)
                self._hooked.append((client, event, unique))
        if not self._hooked:
            raise ValueError("no DynamoDB client to crash on: pass the clients the handler uses")

    def start(self) -> None:
        """A new invocation: count its writes from zero."""
        with self._lock:
            self.writes = 0

    def start_mine(self) -> None:
        """This thread's invocation starts: count its writes from zero (`mine`)."""
        self._mine.writes = 0

    @property
    def mine(self) -> int:
        """The writes of this thread since its `start_mine()`."""
        return int(getattr(self._mine, "writes", 0))

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
        def hook(
            model: Any = None,
            params: Any = None,
            parsed: Any = None,
            context: Any = None,
            http_response: Any = None,
            **_: Any,
        ) -> Any:
            name = getattr(model, "name", "a write")
            if name not in WRITE_OPERATIONS:
                return None
            if when == "after":
                self._add_unprocessed(parsed)
            if when == "before":
                self._mine.writes = getattr(self._mine, "writes", 0) + 1
            with self._lock:
                if when == "before":
                    self.writes += 1
                if self._armed is None:
                    return None
                armed_when, nth = self._armed
                if when == "before":
                    self._seen += 1
                fires_now = "after" if armed_when in ("after", "lost") else "before"
                if fires_now != when or self._seen != nth:
                    return None
                self._armed = None
                answer = (
                    answer_for(client, model, params, self._rng)
                    if armed_when == "dynamodb"
                    else None
                )
                self.fired.append(f"{armed_when} {answer.name if answer else name}")
            if armed_when == "lost":
                _send_again(client, name, context, parsed, http_response)
                return None
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


def _keep_params(params: Any = None, context: Any = None, model: Any = None, **_: Any) -> None:
    """Keeps a write's parameters in its request context (the SDK's retry sends them again)."""
    if isinstance(context, dict) and getattr(model, "name", None) in WRITE_OPERATIONS:
        context[_PARAMS] = params


def _send_again(client: Any, operation: str, context: Any, parsed: Any, http: Any) -> None:
    """The SDK's retry of a write whose answer was lost: the same parameters sent again, the
    handler given its answer (`parsed` replaced, the first answer's status made its own) or its
    error (raised)."""
    params = context.get(_PARAMS) if isinstance(context, dict) else None
    if not isinstance(params, dict) or not isinstance(parsed, dict):
        raise InjectedCrash(f"crashed after {operation} (its answer lost, nothing to send again)")
    answer = client._make_api_call(operation, copy.deepcopy(params))
    parsed.clear()
    parsed.update(answer)
    if http is not None:
        http.status_code = 200


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
