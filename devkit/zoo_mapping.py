"""Zoo consumers whose mistake is in their template, not their code: each is correct under one
event source mapping and broken under the one its template declares, so the check must play
the template's settings to catch it (devkit.zoo).

`deployed(handler, **properties)` gives a handler the SAM events of a function subscribed to the
zoo's queue, FIFO queue, topic, Kinesis stream and table stream (the sources the zoo's records
name), each with `properties` (`BatchSize`, `FunctionResponseTypes`, ...): what a
`LocalFunction` of a real template carries, as `spec.events`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from lambda_inbox_tools.local.event_specs import sam_event
from lambda_inbox_tools.local.template import FunctionSpec
from lambda_inbox_tools.testing.events import FIFO_QUEUE_ARN, MSK_CLUSTER_ARN, QUEUE_ARN
from lambda_inbox_tools.testing.stream_events import DYNAMODB_STREAM_ARN, KINESIS_STREAM_ARN

from .zoo_ledger import OK, Ledger, cancelled_by_condition

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
REPORT_FAILURES = {"FunctionResponseTypes": ["ReportBatchItemFailures"]}
#: The most records a batch-at-once consumer's transaction holds (2 actions a message).
MAX_TRANSACTION_MESSAGES = 50


@dataclass
class Deployed:
    """A handler and the function spec of its template (as `LocalFunction` has them)."""

    handler: Handler
    spec: FunctionSpec

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        return self.handler(event, context)


def zoo_events(properties: dict[str, Any], fifo: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """SAM events from the zoo's five sources, with `properties` (`fifo`: the FIFO queue's)."""
    streams = {"StartingPosition": "TRIM_HORIZON", **properties}
    return {
        "Queue": {"Type": "SQS", "Properties": {"Queue": QUEUE_ARN, **properties}},
        "FifoQueue": {"Type": "SQS", "Properties": {"Queue": FIFO_QUEUE_ARN, **fifo}},
        "Topic": {
            "Type": "MSK",
            "Properties": {"Stream": MSK_CLUSTER_ARN, "Topics": ["points"], **streams},
        },
        "Stream": {"Type": "Kinesis", "Properties": {"Stream": KINESIS_STREAM_ARN, **streams}},
        "Table": {"Type": "DynamoDB", "Properties": {"Stream": DYNAMODB_STREAM_ARN, **streams}},
    }


def deployed(handler: Handler, **properties: Any) -> Deployed:
    """`handler` as a function of a template whose events have `properties` (the FIFO queue's
    without a batching window and with at most 10 a batch, as Lambda allows)."""
    fifo = {k: v for k, v in properties.items() if k != "MaximumBatchingWindowInSeconds"}
    fifo["BatchSize"] = min(int(fifo.get("BatchSize", 10)), 10)
    events = [sam_event(name, event) for name, event in zoo_events(properties, fifo).items()]
    spec = FunctionSpec(
        logical_id="ZooFunction",
        name="zoo",
        code_uri=Path("."),
        handler="zoo.handler",
        timeout=30,
        memory_size=256,
        environment={},
        events=[event for event in events if event is not None],
    )
    return Deployed(handler, spec)


def _items(event: dict[str, Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(the partial batch response's itemIdentifier, the message) of every record, in order."""
    if "Records" in event:
        for record in event["Records"]:
            if "messageId" in record:
                yield record["messageId"], json.loads(record["body"])
            elif "kinesis" in record:
                data = base64.b64decode(record["kinesis"]["data"])
                yield record["kinesis"]["sequenceNumber"], json.loads(data)
            else:
                image = record["dynamodb"]["NewImage"]
                message = {name: next(iter(value.values())) for name, value in image.items()}
                yield record["dynamodb"]["SequenceNumber"], message
        return
    for tp, records in event["records"].items():
        for record in records:
            identifier = {"topic-partition": tp, "offset": record["offset"]}
            yield identifier, json.loads(base64.b64decode(record["value"]))


def reports_failures(ledger: Ledger) -> Handler:
    """A transactional inbox that reports a failed message, and every one after it, in a
    partial batch response instead of raising: sound where the mapping reads the response."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        items = list(_items(event))
        for position, (_, message) in enumerate(items):
            event_id = str(message["event_id"])
            actions = [{"Put": ledger.mark(event_id)}, {"Update": ledger.effect(event_id)}]
            try:
                ledger.dynamodb.transact_write_items(TransactItems=actions)
            except ClientError as error:
                if cancelled_by_condition(error):
                    continue
                failed = [{"itemIdentifier": identifier} for identifier, _ in items[position:]]
                return {"batchItemFailures": failed}
        return OK

    return handler


def goes_on_after_a_failure(ledger: Ledger) -> Handler:
    """A transactional inbox that reports a failed message and goes on with the rest of the
    batch, as a processor built for standard queues does: on a FIFO queue it acknowledges a
    group's later messages after an earlier one failed."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        failed = []
        for identifier, message in _items(event):
            event_id = str(message["event_id"])
            actions = [{"Put": ledger.mark(event_id)}, {"Update": ledger.effect(event_id)}]
            try:
                ledger.dynamodb.transact_write_items(TransactItems=actions)
            except ClientError as error:
                if not cancelled_by_condition(error):
                    failed.append({"itemIdentifier": identifier})
        return {"batchItemFailures": failed}

    return handler


def partial_responses_without_the_setting(ledger: Ledger) -> Deployed:
    """`reports_failures`, deployed without `FunctionResponseTypes`: Lambda ignores what it
    reports and deletes (checkpoints) the whole batch."""
    return deployed(reports_failures(ledger))


def partial_responses_with_the_setting(ledger: Ledger) -> Deployed:
    """The same code, deployed with `ReportBatchItemFailures` (the control)."""
    return deployed(reports_failures(ledger), **REPORT_FAILURES)


def batch_in_one_transaction(ledger: Ledger) -> Handler:
    """Commits a whole batch in one transaction (each message's inbox record and effect; a
    duplicate cancels it, and the batch is written again without what is marked). Sound while
    a batch holds at most 50 messages: DynamoDB refuses a transaction of more than 100
    actions."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        pending = list(dict.fromkeys(str(message["event_id"]) for _, message in _items(event)))
        while pending:
            actions = [
                action
                for event_id in pending
                for action in ({"Put": ledger.mark(event_id)}, {"Update": ledger.effect(event_id)})
            ]
            try:
                ledger.dynamodb.transact_write_items(TransactItems=actions)
                return OK
            except ClientError as error:
                if not cancelled_by_condition(error):
                    raise  # the invocation fails: the batch is delivered again
            pending = [event_id for event_id in pending if not ledger.marked(event_id)]
        return OK

    return handler


def big_batch_in_one_transaction(ledger: Ledger) -> Deployed:
    """`batch_in_one_transaction`, deployed with `BatchSize: 100` (and the batching window
    Lambda then requires on SQS)."""
    return deployed(
        batch_in_one_transaction(ledger),
        BatchSize=100,
        MaximumBatchingWindowInSeconds=1,
        **REPORT_FAILURES,
    )


def small_batch_in_one_transaction(ledger: Ledger) -> Deployed:
    """The same code with `BatchSize: 10` (the control)."""
    return deployed(batch_in_one_transaction(ledger), BatchSize=10, **REPORT_FAILURES)
