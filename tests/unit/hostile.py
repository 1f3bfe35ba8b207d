"""The limits AWS enforces and moto does not, as botocore hooks, and the replay of a dead letter.

moto accepts an empty SQS body, a NUL in an attribute value or a 3 KB partition key; SQS and
DynamoDB refuse them. `enforce_sqs_limits` and `enforce_dynamodb_key_limits` make a moto client
refuse them too (as a `ClientError` with the service's error code), so a test proves the request
would pass the real service's validation.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from lambda_inbox.sqs import parse_sqs_event
from tests.unit.helpers import sqs_event, sqs_record

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

MAX_SQS_MESSAGE_BYTES = 256 * 1024
MAX_PARTITION_KEY_BYTES = 2048
_SQS_TEXT = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")
_ATTRIBUTE_NAME = re.compile(
    r"(?!\.)(?!.*\.\.)(?!.*\.$)(?!(?i:aws\.|amazon\.))[A-Za-z0-9_.-]{1,256}"
)
_DATA_TYPE = re.compile(r"(String|Number|Binary)(\.[A-Za-z0-9_.-]+)?")


def _refuse(operation: str, code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


def sqs_problems(params: dict[str, Any]) -> list[str]:
    """What SQS would refuse in a SendMessage request (empty list: nothing)."""
    problems: list[str] = []
    body = params.get("MessageBody")
    if not isinstance(body, str) or not body:
        problems.append("empty body")
    elif not _SQS_TEXT.fullmatch(body):
        problems.append("body has characters SQS forbids")
    size = len(body.encode("utf-8", "surrogatepass")) if isinstance(body, str) else 0
    attributes = params.get("MessageAttributes") or {}
    if len(attributes) > 10:
        problems.append(f"{len(attributes)} attributes")
    for name, value in attributes.items():
        if not _ATTRIBUTE_NAME.fullmatch(name):
            problems.append(f"attribute name {name!r}")
        data_type = value.get("DataType", "")
        if not _DATA_TYPE.fullmatch(data_type):
            problems.append(f"data type {data_type!r}")
        size += len(name) + len(data_type)
        if "BinaryValue" in value:
            if not value["BinaryValue"]:
                problems.append(f"empty binary {name!r}")
            size += len(value["BinaryValue"])
        else:
            text = value.get("StringValue")
            if not isinstance(text, str) or not text or not _SQS_TEXT.fullmatch(text):
                problems.append(f"string value of {name!r}")
            else:
                size += len(text.encode("utf-8"))
            if data_type.startswith("Number") and isinstance(text, str):
                try:
                    float(text)
                except ValueError:
                    problems.append(f"number {name!r}")
    if size > MAX_SQS_MESSAGE_BYTES:
        problems.append(f"message of {size} bytes")
    group = params.get("MessageGroupId")
    if group is not None and not re.fullmatch(r"[!-~]{1,128}", group):
        problems.append("message group id")
    return problems


def enforce_sqs_limits(client: SQSClient) -> None:
    def check(params: dict[str, Any], **_: Any) -> None:
        problems = sqs_problems(params)
        if problems:
            raise _refuse("SendMessage", "InvalidParameterValue", "; ".join(problems))

    client.meta.events.register("before-parameter-build.sqs.SendMessage", check)


def _keys(value: object) -> list[str]:
    """Every `pk` string value anywhere in a request."""
    found: list[str] = []
    if isinstance(value, dict):
        for name, inner in value.items():
            if name == "pk" and isinstance(inner, dict) and isinstance(inner.get("S"), str):
                found.append(inner["S"])
            else:
                found.extend(_keys(inner))
    elif isinstance(value, list):
        for inner in value:
            found.extend(_keys(inner))
    return found


def enforce_dynamodb_key_limits(client: DynamoDBClient) -> None:
    def check(params: dict[str, Any], model: Any, **_: Any) -> None:
        for key in _keys(params):
            try:
                size = len(key.encode("utf-8"))
            except UnicodeEncodeError:
                raise _refuse(model.name, "ValidationException", "key is not UTF-8") from None
            if not key or size > MAX_PARTITION_KEY_BYTES:
                raise _refuse(model.name, "ValidationException", f"key of {size} bytes")

    client.meta.events.register("before-parameter-build.dynamodb", check)


def replay(dead_letter: MessageTypeDef) -> dict[str, Any]:
    """The Lambda SQS record of `dead_letter` redriven to the source queue."""
    attributes: dict[str, Any] = {}
    for name, value in dead_letter.get("MessageAttributes", {}).items():
        if "BinaryValue" in value:
            import base64

            encoded = base64.b64encode(value["BinaryValue"]).decode("ascii")
            attributes[name] = {"binaryValue": encoded, "dataType": value["DataType"]}
        else:
            attributes[name] = {"stringValue": value["StringValue"], "dataType": value["DataType"]}
    return sqs_record(dead_letter["Body"], message_attributes=attributes)


def recovered_body(dead_letter: MessageTypeDef) -> bytes:
    """The original bytes, as the SQS adapter decodes them when the dead letter is replayed."""
    (message,) = parse_sqs_event(sqs_event(replay(dead_letter)))
    return message.body


def recovered_attributes(dead_letter: MessageTypeDef) -> dict[str, str]:
    (message,) = parse_sqs_event(sqs_event(replay(dead_letter)))
    return dict(message.attributes)
