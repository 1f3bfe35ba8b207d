"""Faults injected at botocore's hooks of a client, below the code under test.

- Synthetic DynamoDB answers at the HTTP layer (`FaultInjector` with `throttling` or
  `cancelled(...)`): a `before-send` hook answers in DynamoDB's own JSON error format, so botocore
  parses (and, for throttling, retries) the answer exactly as it would a real one, and the
  library sees nothing different from a service fault.
- The Lambda runtime dying just before or just after a call (`crash_on`), a lost response
  (`lose_first_response`), a stale read (`stale_batch_reads`) and slow sends (`slow_sends`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, AWSResponse, HTTPHeaders
from botocore.exceptions import ReadTimeoutError

TRANSACT_OPERATION = "dynamodb.TransactWriteItems"

#: Answers a request instead of DynamoDB, or returns None to let it through.
Fault = Callable[[AWSPreparedRequest, list[dict[str, Any]]], AWSResponse | None]
#: Cancellation reason codes for the actions of a transaction (one per action), or None.
ReasonCodes = Callable[[list[dict[str, Any]]], list[str] | None]


def everywhere(code: str) -> ReasonCodes:
    """Reasons for `cancelled`: `code` on every action."""
    return lambda items: [code] * len(items)


def on_item(code: str, pk: str, sk: str | None = None) -> ReasonCodes:
    """Reasons for `cancelled`: `code` on each action that touches item `pk` (and `sk`, when
    given), "None" on the others; a transaction not touching it is let through."""

    def touches(item: dict[str, Any]) -> bool:
        (action,) = item.values()
        key = action.get("Key") or action.get("Item") or {}
        return bool(key.get("pk") == {"S": pk} and (sk is None or key.get("sk") == {"S": sk}))

    def codes(items: list[dict[str, Any]]) -> list[str] | None:
        reasons = [code if touches(item) else "None" for item in items]
        return reasons if code in reasons else None

    return codes


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


def dynamodb_answer(
    request: AWSPreparedRequest, status: int, body: bytes, request_id: str | None = None
) -> AWSResponse:
    """An HTTP answer to `request` with a DynamoDB JSON `body`, headers as the service sends
    them (a `before-send` hook returns it instead of sending the request)."""
    headers = HTTPHeaders()
    headers["Content-Type"] = "application/x-amz-json-1.0"
    headers["x-amzn-RequestId"] = request_id or uuid.uuid4().hex
    headers["Content-Length"] = str(len(body))
    return AWSResponse(str(request.url), status, headers, _Body(body))


def dynamodb_error(
    request: AWSPreparedRequest, code: str, message: str, **fields: Any
) -> AWSResponse:
    """An HTTP 400 answer in DynamoDB's JSON error format, as the service would send it."""
    body = json.dumps(
        {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message, **fields}
    ).encode("utf-8")
    return dynamodb_answer(request, 400, body)


def throttling(request: AWSPreparedRequest, items: list[dict[str, Any]]) -> AWSResponse:
    """`ThrottlingException` for the whole request (botocore itself retries this one)."""
    return dynamodb_error(request, "ThrottlingException", "Rate of requests exceeds the allowed")


def cancelled(codes: ReasonCodes) -> Fault:
    """`TransactionCanceledException` with one reason per transact item, as `codes(items)` says
    (`codes` returning None lets the request through)."""

    def fault(request: AWSPreparedRequest, items: list[dict[str, Any]]) -> AWSResponse | None:
        reasons = codes(items)
        if reasons is None:
            return None
        if len(reasons) != len(items):
            raise ValueError(f"{len(reasons)} cancellation reasons for {len(items)} actions")
        return dynamodb_error(
            request,
            "TransactionCanceledException",
            f"Transaction cancelled, please refer cancellation reasons [{', '.join(reasons)}]",
            CancellationReasons=[
                {"Code": code} if code == "None" else {"Code": code, "Message": f"injected {code}"}
                for code in reasons
            ],
        )

    return fault


class FaultInjector:
    """Answers the first `times` HTTP sends of `TransactWriteItems` that `fault` answers
    (`times` None: all of them) while `active` (set it to False to end the outage).

    A `before-send` hook: the request never reaches DynamoDB Local when a fault is injected, and
    botocore parses and retries the synthetic answer exactly as it would a real one.
    """

    def __init__(self, client: Any, fault: Fault, times: int | None) -> None:
        self.fault = fault
        self.times = times
        self.active = True
        self.sends = 0
        self.injected = 0
        self._lock = threading.Lock()
        client.meta.events.register(f"before-send.{TRANSACT_OPERATION}", self._on_send)

    def _on_send(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        body = request.body
        items = json.loads(body if isinstance(body, bytes | str) else b"{}")["TransactItems"]
        with self._lock:
            self.sends += 1
            if not self.active or (self.times is not None and self.injected >= self.times):
                return None
            response = self.fault(request, items)
            if response is not None:
                self.injected += 1
            return response


class LambdaCrashed(Exception):
    """The Lambda runtime died (timeout, out of memory, host failure) at this point."""


def crash_on(client: Any, hook: str, operation: str = TRANSACT_OPERATION, times: int = 1) -> None:
    """Raise `LambdaCrashed` from the `hook` ("before-call": the request is never sent;
    "after-call": DynamoDB did the work, the answer is never used) of the first `times` calls
    of `operation` ("dynamodb.TransactWriteItems" unless given)."""
    calls = 0
    lock = threading.Lock()

    def crash(**_: Any) -> None:
        nonlocal calls
        with lock:
            calls += 1
            if calls <= times:
                raise LambdaCrashed(f"crashed in {hook} of {operation}")

    client.meta.events.register(f"{hook}.{operation}", crash)


def lose_first_response(client: Any, operation: str = TRANSACT_OPERATION) -> list[int]:
    """The first call of `operation` reaches DynamoDB, but its answer is lost on the way back
    (`ReadTimeoutError`). Returns the HTTP status codes of the lost answers (filled then)."""
    lost: list[int] = []

    def lose(http_response: Any, **_: Any) -> None:
        if not lost:
            lost.append(http_response.status_code)
            raise ReadTimeoutError(endpoint_url=client.meta.endpoint_url)

    client.meta.events.register(f"after-call.{operation}", lose)
    return lost


def stale_batch_reads(client: Any) -> None:
    """Every `BatchGetItem` of the client answers "nothing found", as an eventually consistent
    read that missed recent writes may."""

    def stale(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Responses"] = {table: [] for table in parsed.get("Responses", {})}

    client.meta.events.register("after-call.dynamodb.BatchGetItem", stale)


def slow_sends(client: Any, operation: str, seconds: float) -> None:
    """Every HTTP send of `operation` (e.g. "sqs.SendMessage") waits `seconds` first."""

    def delay(**_: Any) -> None:
        time.sleep(seconds)

    client.meta.events.register(f"before-send.{operation}", delay)
