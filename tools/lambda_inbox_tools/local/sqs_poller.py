"""The SQS event source mapping, emulated on a real queue.

Rules (those of Lambda's SQS pollers, "Using Lambda with Amazon SQS"):
- receive up to `BatchSize` messages, waiting up to `MaximumBatchingWindowInSeconds` to fill the
  batch; the messages stay invisible for the queue's visibility timeout meanwhile, or, when
  "(batch window) + (function timeout) > (queue visibility timeout)", for "(batch window) +
  (function timeout) + 30s" (AWS's rule). The window and that timeout are scaled by the stack's
  time scale, as the queues' visibility timeouts are: a message is not received twice within
  one window;
- invoke the function with the Lambda SQS event;
- the invocation failed (error, timeout, crash): nothing is deleted, every message reappears
  after its visibility timeout;
- it succeeded without `ReportBatchItemFailures`: every message is deleted;
- with `ReportBatchItemFailures`: every message is deleted except those listed in
  `batchItemFailures`; an empty or null response, or an empty or null `batchItemFailures`, is a
  full success; a response that is no JSON object (a plain string, a list) and an identifier
  that is empty, null, of a bad key name or not in the batch fail the whole batch;
- a message received more than `maxReceiveCount` times is moved to the dead-letter queue by SQS
  itself (moto server does it on receive, as SQS does).
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..batch_responses import batch_outcome, sqs_acknowledged
from .invoker import Invocation, Invoker
from .loop import PollingLoop
from .template import REGION, FunctionSpec, QueueSpec, SqsEventSpec

MAX_RECEIVE = 10


def lambda_sqs_record(message: Mapping[str, Any], queue_arn: str) -> dict[str, Any]:
    """One record of the Lambda SQS event from a ReceiveMessage result."""
    attributes: dict[str, Any] = {}
    for name, attribute in (message.get("MessageAttributes") or {}).items():
        converted: dict[str, Any] = {
            "dataType": attribute["DataType"],
            "stringListValues": [],
            "binaryListValues": [],
        }
        if "StringValue" in attribute:
            converted["stringValue"] = attribute["StringValue"]
        if "BinaryValue" in attribute:
            converted["binaryValue"] = base64.b64encode(attribute["BinaryValue"]).decode()
        attributes[name] = converted
    body = message.get("Body", "")
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": body,
        "attributes": dict(message.get("Attributes") or {}),
        "messageAttributes": attributes,
        "md5OfBody": message.get("MD5OfBody")
        or hashlib.md5(body.encode(), usedforsecurity=False).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


def messages_to_delete(
    message_ids: Sequence[str], invocation: Invocation, report_batch_item_failures: bool
) -> list[str]:
    """The messages the event source mapping deletes after an invocation (the rules above,
    `batch_responses.batch_outcome`)."""
    outcome = batch_outcome(
        invocation.response,
        message_ids,
        raised=invocation.failed,
        reads_response=report_batch_item_failures,
    )
    return sqs_acknowledged(message_ids, outcome)


@dataclass
class PollerStats:
    invocations: int = 0
    records: int = 0
    deleted: int = 0
    failed_records: int = 0
    failed_invocations: int = 0
    errors: list[str] = field(default_factory=list)


class SqsPoller:
    """Polls one queue for one function event until `stop()`."""

    def __init__(
        self,
        sqs: Any,
        function: FunctionSpec,
        event: SqsEventSpec,
        queue: QueueSpec,
        invoker: Invoker,
        *,
        scale: float = 1.0,
    ) -> None:
        self.sqs = sqs
        self.function = function
        self.event = event
        self.queue = queue
        self.invoker = invoker
        #: The batching window and the visibility timeout of received messages, scaled.
        self.window = event.batching_window * scale
        visibility = float(queue.visibility_timeout)
        if event.batching_window > 0 and event.batching_window + function.timeout > visibility:
            visibility = event.batching_window + function.timeout + 30
        self.visibility_timeout = max(1, round(visibility * scale))
        self.stats = PollerStats()
        self._loop = PollingLoop(self.label, self.poll_once, errors=self.stats.errors)

    @property
    def label(self) -> str:
        return f"{self.queue.name} -> {self.function.logical_id}"

    def receive(self) -> list[dict[str, Any]]:
        """Up to BatchSize messages, waiting at most the batching window to fill the batch."""
        batch: list[dict[str, Any]] = []
        deadline = time.monotonic() + self.window
        while len(batch) < self.event.batch_size and not self._loop.stopping.is_set():
            wait = 1 if not batch else max(0, min(1, round(deadline - time.monotonic())))
            answer = self.sqs.receive_message(
                QueueUrl=self.queue.url,
                MaxNumberOfMessages=min(MAX_RECEIVE, self.event.batch_size - len(batch)),
                VisibilityTimeout=self.visibility_timeout,
                WaitTimeSeconds=wait,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            received = answer.get("Messages", [])
            batch.extend(received)
            if not batch or time.monotonic() >= deadline:
                break
        return batch

    def poll_once(self) -> int:
        """One receive-invoke-delete cycle; returns the number of records invoked with."""
        messages = self.receive()
        if not messages:
            return 0
        records = [lambda_sqs_record(m, self.queue.arn) for m in messages]
        invocation = self.invoker.invoke(self.function, {"Records": records})
        ids = [r["messageId"] for r in records]
        delete = set(messages_to_delete(ids, invocation, self.event.report_batch_item_failures))
        handles = [
            {"Id": str(i), "ReceiptHandle": r["receiptHandle"]}
            for i, r in enumerate(records)
            if r["messageId"] in delete
        ]
        for start in range(0, len(handles), MAX_RECEIVE):
            self.sqs.delete_message_batch(
                QueueUrl=self.queue.url, Entries=handles[start : start + MAX_RECEIVE]
            )
        self.stats.invocations += 1
        self.stats.records += len(records)
        self.stats.deleted += len(delete)
        self.stats.failed_records += len(records) - len(delete)
        if invocation.failed:
            self.stats.failed_invocations += 1
            self.stats.errors.append(str(invocation.error))
        return len(records)

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()
