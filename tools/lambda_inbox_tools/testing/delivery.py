"""A handler's answer read as Lambda reads it, and a handler driven as an event source drives it.

`response` is what the handler returned, or the exception it raised (the invocation failed: every
record comes back). With `report_batch_item_failures` (the mapping's `FunctionResponseTypes`
holding `ReportBatchItemFailures`, the default here) a null response, `{}` and
`{"batchItemFailures": []}` acknowledge the whole batch, and a malformed response (an identifier
not in the batch, of a bad key name, empty or null; no JSON object) fails all of it. Without it
Lambda does not read the response: only an exception fails the batch. Every reader here goes
through AWS's one rule (`lambda_inbox_tools.batch_responses.batch_outcome`), the local stack's
pollers and the check too: which records failed (`failed_ids`, `failed_offsets`,
`failed_sequence_numbers`), what the source delivers next (`event_after`), redelivery until
the batch is acknowledged (`deliver_until_acknowledged`); and concurrent invocations
(`run_concurrently`, as concurrent Lambda execution environments)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..batch_responses import (
    BatchOutcome,
    Identifier,
    batch_outcome,
    kafka_next_offsets,
    stream_first_failure,
)
from .events import delivered_again, sqs_event
from .stream_events import record_sequence

__all__ = [
    "deliver_until_acknowledged",
    "event_after",
    "failed_ids",
    "failed_offsets",
    "failed_sequence_numbers",
    "outcome_of",
    "run_concurrently",
]

T = TypeVar("T")
#: A Lambda handler: `handler(event, context)`.
Handler = Callable[[dict[str, Any], Any], Any]


def outcome_of(
    response: Any,
    identifiers: Sequence[Identifier] | None,
    *,
    report_batch_item_failures: bool = True,
) -> BatchOutcome:
    """AWS's verdict on `response` (a handler's return, or the exception it raised) to a batch
    of `identifiers` (None: not checked against a batch)."""
    raised = isinstance(response, BaseException)
    return batch_outcome(
        None if raised else response,
        identifiers,
        raised=raised,
        reads_response=report_batch_item_failures,
    )


def _identifiers(event: Mapping[str, Any]) -> list[Identifier]:
    """The `itemIdentifier` of each record of an SQS, Kafka, Kinesis or DynamoDB Streams event,
    in the event's order."""
    if "Records" not in event:
        return [
            (partition, int(raw["offset"]))
            for partition, records in event["records"].items()
            for raw in records
        ]
    records = event["Records"]
    if records and ("kinesis" in records[0] or "dynamodb" in records[0]):
        return [record_sequence(record) for record in records]
    return [str(record["messageId"]) for record in records]


def _failed(
    response: Any,
    event: Mapping[str, Any] | None,
    report_batch_item_failures: bool,
    kind: type,
) -> list[Any]:
    outcome = outcome_of(
        response,
        _identifiers(event) if event is not None else None,
        report_batch_item_failures=report_batch_item_failures,
    )
    if event is None and outcome.whole:
        raise ValueError(
            f"{outcome.why}: Lambda fails the whole batch (pass the event for its identifiers)"
        )
    if not all(isinstance(identifier, kind) for identifier in outcome.failed):
        raise ValueError(f"the response names another source's records: {outcome.failed!r:.200}")
    return list(outcome.failed)


def failed_ids(
    response: Any,
    event: Mapping[str, Any] | None = None,
    *,
    report_batch_item_failures: bool = True,
) -> list[str]:
    """The `messageId`s that failed by `response` to the SQS `event`, in the event's order
    (every one when the whole batch failed). Without `event`: the ids the response reports, []
    for a complete success, ValueError for a malformed response (it fails the whole batch)."""
    return _failed(response, event, report_batch_item_failures, str)


def failed_offsets(
    response: Any,
    event: Mapping[str, Any] | None = None,
    *,
    report_batch_item_failures: bool = True,
) -> list[tuple[str, int]]:
    """The (topic-partition, offset) pairs that failed by `response` to the Kafka `event` (as
    `failed_ids`)."""
    return _failed(response, event, report_batch_item_failures, tuple)


def failed_sequence_numbers(
    response: Any,
    event: Mapping[str, Any] | None = None,
    *,
    report_batch_item_failures: bool = True,
) -> list[str]:
    """The sequence numbers that failed by `response` to the Kinesis or DynamoDB Streams `event`
    (as `failed_ids`)."""
    return _failed(response, event, report_batch_item_failures, str)


def event_after(
    event: Mapping[str, Any],
    response: Any,
    *,
    report_batch_item_failures: bool = True,
) -> dict[str, Any] | None:
    """The event the source delivers after `response` (what the handler returned, or the
    exception it raised) to `event`; None when the whole batch was acknowledged. SQS: the
    messages that failed again (`delivered_again`); Kafka: each partition again from its first
    failed offset; Kinesis and DynamoDB Streams: every record from the lowest failed sequence
    number on. A failed invocation or a malformed response brings the whole event back."""
    identifiers = _identifiers(event)
    outcome = outcome_of(
        response, identifiers, report_batch_item_failures=report_batch_item_failures
    )
    if outcome.complete_success:
        return None
    if "Records" not in event:
        following = kafka_next_offsets([i for i in identifiers if isinstance(i, tuple)], outcome)
        again = {
            partition: [raw for raw in records if int(raw["offset"]) >= following[partition]]
            for partition, records in event["records"].items()
        }
        return {**event, "records": {p: records for p, records in again.items() if records}}
    records = event["Records"]
    if records and ("kinesis" in records[0] or "dynamodb" in records[0]):
        numbers = [str(i) for i in identifiers]
        first = stream_first_failure(numbers, outcome) or 0
        return {"Records": [dict(record) for record in records[first:]]}
    failed = set(outcome.failed)
    return sqs_event(*(delivered_again(r) for r in records if str(r["messageId"]) in failed))


def deliver_until_acknowledged(
    handler: Handler,
    event: Mapping[str, Any],
    *,
    max_deliveries: int = 30,
    report_batch_item_failures: bool = True,
) -> int:
    """Invoke `handler` with `event`, then with what the event source delivers after each answer
    (`event_after`: the records a response reports, or the whole event again when the
    handler raised or answered a malformed response), until the whole batch is acknowledged.
    `report_batch_item_failures`: whether the mapping reads partial batch responses (without it
    only an exception brings the event back). Returns the number of deliveries; AssertionError
    when records still fail after `max_deliveries`, from the handler's last exception if the
    last delivery raised."""
    pending: Mapping[str, Any] | None = event
    deliveries = 0
    answer: Any = None
    while pending is not None:
        deliveries += 1
        if deliveries > max_deliveries:
            raise AssertionError(f"still failing after {max_deliveries} deliveries") from (
                answer if isinstance(answer, BaseException) else None
            )
        try:
            answer = handler(dict(pending), None)
        except Exception as error:  # the invocation failed: the whole batch comes back
            answer = error
        pending = event_after(
            pending, answer, report_batch_item_failures=report_batch_item_failures
        )
    return deliveries


def run_concurrently(calls: Sequence[Callable[[], T]], *, timeout: float = 120) -> list[T]:
    """Run each call in a thread of its own, all released at once (as concurrent Lambda
    invocations), and return their results in order. An exception in a thread is raised here;
    so is a thread still running after `timeout` seconds."""
    start = threading.Barrier(len(calls))
    results: dict[int, T] = {}
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            start.wait(timeout=30)
            results[index] = calls[index]()
        except BaseException as error:  # raised again by the calling thread
            errors.append(error)

    threads = [
        threading.Thread(target=run, args=(index,), name=f"invocation-{index}")
        for index in range(len(calls))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    if errors:
        raise errors[0]
    if any(thread.is_alive() for thread in threads):
        raise TimeoutError(f"invocations still running after {timeout} s")
    return [results[index] for index in range(len(calls))]
