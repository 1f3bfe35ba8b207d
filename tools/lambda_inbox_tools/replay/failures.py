"""What a Kafka event source gave up on, read from its on-failure destination.

When an MSK or self-managed Kafka event source mapping exhausts its retries (or a record's age),
it sends an invocation record to its on-failure destination. In an SQS queue that record is
metadata only: `KafkaBatchInfo` names the topic, the partition and the offset range, and the
records must be read again from the cluster. In an S3 bucket the object also holds the
invocation's event (`payload`), records included. Both become `FailedBatch`es, one per
topic-partition.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


class NotAFailureRecord(ValueError):
    """A message or object that is not an event source mapping's invocation record."""


@dataclass
class FailedBatch:
    """Offsets `first`..`last` of one partition that the event source gave up on; `records`
    (Lambda's Kafka record shape) when the destination kept them, else None: read the cluster."""

    topic: str
    partition: int
    first: int
    last: int
    origin: str
    records: list[dict[str, Any]] | None = None
    condition: str = ""
    #: How to remove the failure record once its batch is replayed (an SQS receipt handle).
    receipt: str | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition} offsets {self.first}..{self.last}"


def failed_batches(document: object, origin: str) -> list[FailedBatch]:
    """The batches an invocation record names (raises `NotAFailureRecord`)."""
    if not isinstance(document, Mapping):
        raise NotAFailureRecord(f"{origin}: not a JSON object")
    info = document.get("KafkaBatchInfo")
    if not isinstance(info, Mapping):
        raise NotAFailureRecord(f"{origin}: no KafkaBatchInfo (not a Kafka invocation record)")
    context = document.get("requestContext")
    condition = str(context.get("condition", "")) if isinstance(context, Mapping) else ""
    payload = document.get("payload")
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except json.JSONDecodeError:
            payload = None
    if isinstance(payload, Mapping) and isinstance(payload.get("records"), Mapping):
        return [
            FailedBatch(
                topic=str(records[0].get("topic", tp.rsplit("-", 1)[0])),
                partition=int(records[0].get("partition", tp.rsplit("-", 1)[-1])),
                first=min(int(r["offset"]) for r in records),
                last=max(int(r["offset"]) for r in records),
                origin=origin,
                records=[dict(r) for r in records],
                condition=condition,
            )
            for tp, records in payload["records"].items()
            if isinstance(records, list) and records
        ]
    try:
        return [
            FailedBatch(
                topic=str(info["topic"]),
                partition=int(info["partition"]),
                first=int(info["firstOffset"]),
                last=int(info["lastOffset"]),
                origin=origin,
                condition=condition,
            )
        ]
    except (KeyError, TypeError, ValueError) as error:
        raise NotAFailureRecord(f"{origin}: KafkaBatchInfo lacks {error}") from None


SqsFailure = tuple[dict[str, Any], "list[FailedBatch] | NotAFailureRecord"]


def from_sqs(
    sqs: Any, queue_url: str, *, visibility_timeout: int, wait: int
) -> Iterator[list[SqsFailure]]:
    """The queue's failure records a page (up to 10) at a time, received (hidden for
    `visibility_timeout`) until a receive comes back empty: each message, and its batches or
    why it is not one."""
    while True:
        answer = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=visibility_timeout,
            WaitTimeSeconds=wait,
        )
        messages = answer.get("Messages", [])
        if not messages:
            return
        page: list[SqsFailure] = []
        for message in messages:
            origin = f"sqs message {message['MessageId']}"
            try:
                batches = failed_batches(_json(message.get("Body", ""), origin), origin)
            except NotAFailureRecord as problem:
                page.append((message, problem))
                continue
            for batch in batches:
                batch.receipt = message["ReceiptHandle"]
            page.append((message, batches))
        yield page


def from_s3(
    s3: Any, bucket: str, prefix: str
) -> Iterator[tuple[str, list[FailedBatch] | NotAFailureRecord]]:
    """Every invocation record object under `prefix` (left in place: a rerun replays it again,
    which the consumer's inbox makes a no-op)."""
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for entry in page.get("Contents", []):
            key = entry["Key"]
            origin = f"s3://{bucket}/{key}"
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            try:
                yield key, failed_batches(_json(body, origin), origin)
            except NotAFailureRecord as problem:
                yield key, problem


def _json(text: str | bytes, origin: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise NotAFailureRecord(f"{origin}: not JSON") from None
