"""DynamoDB's own failures of a write, answered at botocore's `before-call` hook as the service
answers them, so the handler sees what the SDK hands over from DynamoDB:

- `TransactWriteItems`: `TransactionCanceledException` whose `CancellationReasons` name
  `TransactionConflict` (another request was writing one of the items) or `ThrottlingError`
  (one item's partition was throttled) on one action and `None` on the others. Neither is a
  duplicate, and botocore does not retry either: a consumer that takes every cancellation for
  "already processed" loses the message.
- `PutItem`, `UpdateItem`, `DeleteItem`: `TransactionConflictException` (a transaction was
  writing the item), which botocore does not retry either.
- `BatchWriteItem`: a partial success: some of the requests (drawn, at least one, perhaps all)
  come back in `UnprocessedItems`, unwritten; the request sent holds the rest only.

An error is an HTTP 400 in DynamoDB's JSON error format, parsed by botocore's own JSON parser
with the error shape's modelled fields added, as `botocore.endpoint` does; the client raises it
as the modelled exception (`client.exceptions.TransactionCanceledException`, ...).
"""

from __future__ import annotations

import base64
import json
import random
from dataclasses import dataclass
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, HTTPHeaders
from botocore.parsers import create_parser

from ...faults import dynamodb_answer, dynamodb_error

__all__ = ["Answer", "answer_for", "as_client_values"]

#: What DynamoDB says with each cancellation reason (AWS's TransactWriteItems reference).
REASON_MESSAGES = {
    "TransactionConflict": "Transaction is ongoing for the item",
    "ThrottlingError": "Throughput exceeds the current capacity for your table or index",
}


@dataclass(frozen=True, slots=True)
class Answer:
    """What the hook does: `name` for the report; `response`, the (HTTP response, parsed answer)
    pair a `before-call` hook answers instead of DynamoDB (None: the request is sent);
    `body`, the request body to send instead; `unprocessed`, what the `after-call` hook adds to
    the answer as `UnprocessedItems`."""

    name: str
    response: tuple[Any, dict[str, Any]] | None = None
    body: bytes | None = None
    unprocessed: dict[str, list[Any]] | None = None


def answer_for(
    client: Any, model: Any, request: dict[str, Any], rng: random.Random
) -> Answer | None:
    """DynamoDB's failure of the write `request` (botocore's request dict, at `before-call`),
    drawn with `rng`; None for an operation without one."""
    operation = str(model.name)
    body = json.loads(request.get("body") or b"{}")
    if operation == "TransactWriteItems":
        reason = rng.choice(sorted(REASON_MESSAGES))
        actions = body.get("TransactItems", [])
        hit = rng.randrange(len(actions)) if actions else 0
        reasons = [
            {"Code": reason, "Message": REASON_MESSAGES[reason]} if n == hit else {"Code": "None"}
            for n in range(len(actions))
        ]
        codes = ", ".join(r["Code"] for r in reasons)
        return Answer(
            f"TransactionCanceledException[{reason}]",
            _error(
                client,
                model,
                request,
                "TransactionCanceledException",
                f"Transaction cancelled, please refer cancellation reasons for specific reasons "
                f"[{codes}]",
                CancellationReasons=reasons,
            ),
        )
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        return Answer(
            "TransactionConflictException",
            _error(
                client,
                model,
                request,
                "TransactionConflictException",
                "Transaction is ongoing for the item",
            ),
        )
    if operation == "BatchWriteItem":
        return _partly_processed(body, rng)
    return None


def _error(
    client: Any, model: Any, request: dict[str, Any], code: str, message: str, **fields: Any
) -> tuple[Any, dict[str, Any]]:
    http = dynamodb_error(_prepared(request), code, message, **fields)
    return http, _parsed(client, model, http)


def _parsed(client: Any, model: Any, http: Any) -> dict[str, Any]:
    """`http` parsed as botocore.endpoint parses an answer (modelled error fields added)."""
    body = b"".join(http.raw.stream())
    response = {"status_code": http.status_code, "headers": http.headers, "body": body}
    parser = create_parser(model.service_model.metadata["protocol"])
    parsed: dict[str, Any] = parser.parse(response, model.output_shape)
    code = parsed.get("Error", {}).get("Code")
    shape = model.service_model.shape_for_error_code(code) if code else None
    if shape is not None:
        parsed.update(parser.parse(response, shape))
    return parsed


def _partly_processed(body: dict[str, Any], rng: random.Random) -> Answer:
    """Some requests of a batch (at least one, perhaps all) left unprocessed: the rest sent."""
    requests = [(t, entry) for t, entries in body["RequestItems"].items() for entry in entries]
    left = set(rng.sample(range(len(requests)), rng.randint(1, len(requests))))
    unprocessed: dict[str, list[Any]] = {}
    processed: dict[str, list[Any]] = {}
    for n, (table, entry) in enumerate(requests):
        (unprocessed if n in left else processed).setdefault(table, []).append(entry)
    unprocessed = as_client_values(unprocessed)
    if not processed:  # nothing written: DynamoDB answers at once
        parsed = {"UnprocessedItems": unprocessed, "ResponseMetadata": {"HTTPStatusCode": 200}}
        return Answer("UnprocessedItems", (dynamodb_answer(_prepared({}), 200, b"{}"), parsed))
    sent = json.dumps({**body, "RequestItems": processed}).encode("utf-8")
    return Answer("UnprocessedItems", body=sent, unprocessed=unprocessed)


def as_client_values(value: Any) -> Any:
    """Attribute values from DynamoDB's wire JSON as botocore parses them: binary values
    decoded from the base64 the wire carries."""
    if isinstance(value, dict):
        converted = {k: as_client_values(v) for k, v in value.items()}
        if set(value) == {"B"} and isinstance(value["B"], str):
            converted["B"] = base64.b64decode(value["B"])
        elif set(value) == {"BS"} and all(isinstance(v, str) for v in value["BS"]):
            converted["BS"] = [base64.b64decode(v) for v in value["BS"]]
        return converted
    if isinstance(value, list):
        return [as_client_values(v) for v in value]
    return value


def _prepared(request: dict[str, Any]) -> AWSPreparedRequest:
    """The request as `faults.dynamodb_answer` reads it (its URL)."""
    return AWSPreparedRequest("POST", str(request.get("url", "")), HTTPHeaders(), b"", False)
