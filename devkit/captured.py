"""A consumer's DynamoDB requests without their consumer: captured once, sent again alone.

The benchmarks' floor is "the batch's requests alone, through the same botocore client": what
no library code can save. `capture_requests` runs a batch with DynamoDB answered inside the
process (`answer_in_process`: an empty `BatchGetItem` result, an empty success for everything
else: every message new, every transaction committed), so nothing is written and the requests
can be sent for real later, with `replay`, against tables that have not seen them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from botocore import xform_name
from botocore.awsrequest import AWSResponse

from lambda_inbox_tools.testing.faults import dynamodb_answer

#: One API call: its operation name and its parameters as the caller passed them.
Captured = tuple[str, dict[str, Any]]

_EMPTY_READ = b'{"Responses": {}, "UnprocessedKeys": {}}'


def answer_in_process(request: Any, **_: Any) -> AWSResponse:
    """botocore `before-send.dynamodb` hook: DynamoDB's answer without DynamoDB."""
    target = request.headers.get("X-Amz-Target", b"")
    target = target.decode() if isinstance(target, bytes) else target
    body = _EMPTY_READ if target.endswith(".BatchGetItem") else b"{}"
    return dynamodb_answer(request, 200, body, request_id="in-process")


def capture_requests(client: Any, run: Callable[[], object]) -> list[Captured]:
    """The DynamoDB calls `run()` makes through `client`, answered in process (nothing is sent),
    with copies of their parameters."""
    captured: list[Captured] = []

    def capture(params: dict[str, Any], model: Any, **_: Any) -> None:
        captured.append((model.name, copy.deepcopy(params)))

    events = client.meta.events
    events.register("provide-client-params.dynamodb", capture)
    events.register("before-send.dynamodb", answer_in_process)
    try:
        run()
    finally:
        events.unregister("before-send.dynamodb", answer_in_process)
        events.unregister("provide-client-params.dynamodb", capture)
    return captured


def replay(client: Any, requests: list[Captured]) -> None:
    """Send captured calls again, in order, through `client` (an error is raised, not kept)."""
    for operation, params in requests:
        getattr(client, xform_name(operation))(**params)
