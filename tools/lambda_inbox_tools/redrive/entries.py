"""Received messages as SendMessageBatch entries (attributes unchanged, FIFO fields for a FIFO
destination), in batches within SQS's count and size limits."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from lambda_inbox.wire import SQS_BATCH_BYTES, SQS_BATCH_ENTRIES, sqs_batches

from .dead_letters import MESSAGE_KEY_ATTRIBUTE, string_attribute

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef

SQS_BATCH = SQS_BATCH_ENTRIES
#: What one SendMessageBatch may carry in total (the SQS limit is at least this).
BATCH_BYTES = SQS_BATCH_BYTES


def sendable_attributes(message: MessageTypeDef) -> dict[str, Any]:
    """Received message attributes in the shape SendMessage takes, values unchanged."""
    attributes: dict[str, Any] = {}
    for name, value in message.get("MessageAttributes", {}).items():
        data_type = value["DataType"]
        if data_type.startswith("Binary"):
            attributes[name] = {"DataType": data_type, "BinaryValue": value.get("BinaryValue", b"")}
        else:
            attributes[name] = {"DataType": data_type, "StringValue": value.get("StringValue", "")}
    return attributes


def fifo_fields(message: MessageTypeDef) -> dict[str, str]:
    """MessageGroupId and MessageDeduplicationId for a FIFO destination, from the source message.

    A message without them (from a standard queue) is grouped by its inbox message key and
    deduplicated by its message id, so a copy sent again by a rerun within five minutes is
    dropped by SQS.
    """
    system = message.get("Attributes", {})
    group = (
        system.get("MessageGroupId")
        or string_attribute(message, MESSAGE_KEY_ATTRIBUTE)
        or message["MessageId"]
    )
    dedup = (
        system.get("MessageDeduplicationId")
        or hashlib.sha256(message["MessageId"].encode("utf-8")).hexdigest()
    )
    return {"MessageGroupId": group, "MessageDeduplicationId": dedup}


def batches_by_size(
    entries: Sequence[dict[str, Any]], limit: int = BATCH_BYTES
) -> Iterator[list[dict[str, Any]]]:
    """Entries in send batches of at most 10 and at most `limit` bytes (a larger one alone)."""
    return sqs_batches(entries, limit)
