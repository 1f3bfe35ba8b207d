"""Synthetic DynamoDB answers for fault injection at the HTTP layer, below the code under test.

A `before-send` hook answers in DynamoDB's own JSON error format, so botocore parses (and, for
throttling, retries) the answer exactly as it would a real one, and the library sees nothing
different from a service fault.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, AWSResponse, HTTPHeaders

TRANSACT_OPERATION = "dynamodb.TransactWriteItems"


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


def dynamodb_error(
    request: AWSPreparedRequest, code: str, message: str, **fields: Any
) -> AWSResponse:
    """An HTTP 400 answer in DynamoDB's JSON error format, as the service would send it."""
    body = json.dumps(
        {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message, **fields}
    ).encode("utf-8")
    headers = HTTPHeaders()
    headers["Content-Type"] = "application/x-amz-json-1.0"
    headers["x-amzn-RequestId"] = uuid.uuid4().hex
    headers["Content-Length"] = str(len(body))
    return AWSResponse(str(request.url), 400, headers, _Body(body))


def throttling(request: AWSPreparedRequest, items: list[dict[str, Any]]) -> AWSResponse:
    """`ThrottlingException` for the whole request (botocore itself retries this one)."""
    return dynamodb_error(request, "ThrottlingException", "Rate of requests exceeds the allowed")


def cancelled(codes: Callable[[list[dict[str, Any]]], list[str] | None]) -> Fault:
    """`TransactionCanceledException` with one reason per transact item, as `codes(items)` says
    (`codes` returning None lets the request through)."""

    def fault(request: AWSPreparedRequest, items: list[dict[str, Any]]) -> AWSResponse | None:
        reasons = codes(items)
        if reasons is None:
            return None
        assert len(reasons) == len(items)
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


#: Answers a request instead of DynamoDB, or returns None to let it through.
Fault = Callable[[AWSPreparedRequest, list[dict[str, Any]]], AWSResponse | None]


class FaultInjector:
    """Answers the first `times` HTTP sends of `TransactWriteItems` that `fault` answers
    (`times` None: all of them).

    A `before-send` hook: the request never reaches DynamoDB Local when a fault is injected, and
    botocore parses and retries the synthetic answer exactly as it would a real one.
    """

    def __init__(self, client: Any, fault: Fault, times: int | None) -> None:
        self.fault = fault
        self.times = times
        self.sends = 0
        self.injected = 0
        self._lock = threading.Lock()
        client.meta.events.register(f"before-send.{TRANSACT_OPERATION}", self._on_send)

    def _on_send(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        body = request.body
        items = json.loads(body if isinstance(body, (bytes, str)) else b"{}")["TransactItems"]
        with self._lock:
            self.sends += 1
            if self.times is not None and self.injected >= self.times:
                return None
            response = self.fault(request, items)
            if response is not None:
                self.injected += 1
            return response
