"""The request limits SQS and DynamoDB enforce and moto does not, as botocore hooks.

moto accepts an empty SQS body, a NUL in an attribute value or a 3 KB partition key; SQS and
DynamoDB refuse them. `enforce_sqs_limits` and `enforce_dynamodb_key_limits` make a client (on
moto, the moto server or DynamoDB Local) refuse them too, as a `ClientError` with the service's
error code raised before the request is built, so a test proves each request it lets through
would pass the real service's validation. `sqs_problems` says what SQS would refuse in one
message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from lambda_inbox.wire import (
    MAX_BATCH_ENTRIES,
    SQS_MAX_ATTRIBUTES,
    SQS_MAX_MESSAGE_BYTES,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

#: SQS: the largest message (body, attribute names, data types and values), in bytes.
MAX_SQS_MESSAGE_BYTES = SQS_MAX_MESSAGE_BYTES
#: SQS: message attributes per message; entries per SendMessageBatch.
MAX_SQS_ATTRIBUTES = SQS_MAX_ATTRIBUTES
MAX_SQS_BATCH_ENTRIES = MAX_BATCH_ENTRIES
#: DynamoDB: the largest partition key value, in UTF-8 bytes.
MAX_PARTITION_KEY_BYTES = 2048

# The characters SQS allows in a body and in String attribute values.
_SQS_TEXT = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")
_ATTRIBUTE_NAME = re.compile(
    r"(?!\.)(?!.*\.\.)(?!.*\.$)(?!(?i:aws\.|amazon\.))[A-Za-z0-9_.-]{1,256}"
)
_DATA_TYPE = re.compile(r"(String|Number|Binary)(\.[A-Za-z0-9_.-]+)?")
_GROUP_ID = re.compile(r"[!-~]{1,128}")


def _refuse(operation: str, code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


def _attribute_problems(name: str, value: Mapping[str, Any]) -> tuple[list[str], int]:
    """What SQS would refuse in one message attribute, and the bytes it counts."""
    problems: list[str] = []
    if not _ATTRIBUTE_NAME.fullmatch(name):
        problems.append(f"attribute name {name!r}")
    data_type = value.get("DataType", "")
    if not isinstance(data_type, str) or not _DATA_TYPE.fullmatch(data_type):
        problems.append(f"data type {data_type!r}")
    if not isinstance(data_type, str):
        data_type = ""
    size = len(name) + len(data_type)
    if "BinaryValue" in value:
        binary = value["BinaryValue"]
        if not binary:
            problems.append(f"empty binary {name!r}")
        else:
            size += len(binary)
        return problems, size
    text = value.get("StringValue")
    if not isinstance(text, str) or not text or not _SQS_TEXT.fullmatch(text):
        problems.append(f"string value of {name!r}")
        return problems, size
    size += len(text.encode("utf-8"))
    if data_type.startswith("Number"):
        try:
            float(text)
        except ValueError:
            problems.append(f"number {name!r}")
    return problems, size


def sqs_problems(params: Mapping[str, Any]) -> list[str]:
    """What SQS would refuse in a SendMessage request or a SendMessageBatch entry (an empty list:
    nothing): an empty body or one with characters SQS forbids, more than 10 attributes, an
    attribute name, data type or value SQS refuses, more than 256 KiB in all, a FIFO group id
    outside 1-128 printable ASCII characters."""
    problems: list[str] = []
    body = params.get("MessageBody")
    if not isinstance(body, str) or not body:
        problems.append("empty body")
    elif not _SQS_TEXT.fullmatch(body):
        problems.append("body has characters SQS forbids")
    size = len(body.encode("utf-8", "surrogatepass")) if isinstance(body, str) else 0
    attributes: Mapping[str, Any] = params.get("MessageAttributes") or {}
    if len(attributes) > MAX_SQS_ATTRIBUTES:
        problems.append(f"{len(attributes)} attributes")
    for name, value in attributes.items():
        found, counted = _attribute_problems(name, value)
        problems.extend(found)
        size += counted
    if size > MAX_SQS_MESSAGE_BYTES:
        problems.append(f"message of {size} bytes")
    group = params.get("MessageGroupId")
    if group is not None and not (isinstance(group, str) and _GROUP_ID.fullmatch(group)):
        problems.append("message group id")
    return problems


def enforce_sqs_limits(client: SQSClient) -> None:
    """Make `client` refuse, with `InvalidParameterValue` (`TooManyEntriesInBatchRequest` for
    more than 10 entries), every SendMessage and SendMessageBatch request SQS would refuse."""

    def check_one(params: dict[str, Any], **_: Any) -> None:
        problems = sqs_problems(params)
        if problems:
            raise _refuse("SendMessage", "InvalidParameterValue", "; ".join(problems))

    def check_batch(params: dict[str, Any], **_: Any) -> None:
        entries: list[dict[str, Any]] = params.get("Entries") or []
        if len(entries) > MAX_SQS_BATCH_ENTRIES:
            raise _refuse(
                "SendMessageBatch", "TooManyEntriesInBatchRequest", f"{len(entries)} entries"
            )
        for entry in entries:
            problems = sqs_problems(entry)
            if problems:
                message = f"entry {entry.get('Id')!r}: " + "; ".join(problems)
                raise _refuse("SendMessageBatch", "InvalidParameterValue", message)

    client.meta.events.register("before-parameter-build.sqs.SendMessage", check_one)
    client.meta.events.register("before-parameter-build.sqs.SendMessageBatch", check_batch)


def partition_keys(request: object) -> list[str]:
    """Every `pk` string value anywhere in a DynamoDB request (keys, items, transactions)."""
    found: list[str] = []
    if isinstance(request, dict):
        for name, inner in request.items():
            if name == "pk" and isinstance(inner, dict) and isinstance(inner.get("S"), str):
                found.append(inner["S"])
            else:
                found.extend(partition_keys(inner))
    elif isinstance(request, list):
        for inner in request:
            found.extend(partition_keys(inner))
    return found


def enforce_dynamodb_key_limits(client: DynamoDBClient) -> None:
    """Make `client` refuse, with `ValidationException`, every request holding a `pk` value
    DynamoDB would refuse: empty, not UTF-8 (a lone surrogate), or beyond 2048 bytes."""

    def check(params: dict[str, Any], model: Any, **_: Any) -> None:
        operation = str(model.name)
        for key in partition_keys(params):
            try:
                size = len(key.encode("utf-8"))
            except UnicodeEncodeError:
                raise _refuse(operation, "ValidationException", "key is not UTF-8") from None
            if not key or size > MAX_PARTITION_KEY_BYTES:
                raise _refuse(operation, "ValidationException", f"key of {size} bytes")

    client.meta.events.register("before-parameter-build.dynamodb", check)
