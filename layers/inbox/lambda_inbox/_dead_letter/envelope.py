"""The dead-letter envelope, written: the `SendMessage` request that carries a poison message's
original body and attributes to the dead-letter queue within SQS's limits (`send_message_request`;
the format: `sources.redriven`, which also reads it back). Loaded by the first dead letter.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zlib
from typing import TYPE_CHECKING, Any

from lambda_inbox._sources.identity import MESSAGE_KEY_ATTRIBUTE
from lambda_inbox._sources.redriven import (
    BODY_BYTES_ATTRIBUTE,
    BODY_DIGEST_ATTRIBUTE,
    BODY_ENCODING_ATTRIBUTE,
    DIGEST_STRING,
    EMPTY_BODY,
    ENVELOPE_ATTRIBUTES,
    ESCAPED_STRING,
    FOLDED_ATTRIBUTE,
    MAX_ATTRIBUTES,
    MAX_ERROR_CHARS,
    MAX_MESSAGE_BYTES,
    is_sqs_text,
)
from lambda_inbox._sources.senders import NO_SENDER, ORIGINAL_SENDER_ATTRIBUTE

if TYPE_CHECKING:
    from lambda_inbox._messages import AttributeValue, InboundMessage

# Patterns as text, compiled by `re.fullmatch` on first use (its cache), not at import.
_ATTRIBUTE_NAME = r"(?!\.)(?!.*\.\.)(?!.*\.$)(?!(?i:aws\.|amazon\.))[A-Za-z0-9_.-]{1,256}"
_DATA_TYPE = r"(String|Number|Binary)(\.[A-Za-z0-9_.-]{1,200})?"
_NUMBER = r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"
_GROUP_ID = r"[!-~]{1,128}"


def send_message_request(
    queue_url: str, message: InboundMessage, *, message_key: str, code: str, error: str
) -> dict[str, Any]:
    """The `SendMessage` request for `message`: valid and within SQS's limits whatever the
    message holds (the envelope rules: `sources.redriven`)."""
    added: dict[str, AttributeValue] = {
        "inbox-error-code": _string(code),
        "inbox-error": _string(error[:MAX_ERROR_CHARS] or code),
        MESSAGE_KEY_ATTRIBUTE: _string(message_key),
        # Whose name space the key is in, as believed (`sources.senders`).
        ORIGINAL_SENDER_ATTRIBUTE: _string(message.sender or NO_SENDER),
    }
    originals: dict[str, AttributeValue] = {}
    invalid: dict[str, AttributeValue] = {}
    for name, value in message.dead_letter_attributes.items():
        if name in added or name in ENVELOPE_ATTRIBUTES:
            continue
        if isinstance(name, str) and re.fullmatch(_ATTRIBUTE_NAME, name) and _usable(value):
            originals[name] = value
        else:
            invalid[str(name)] = value
    body, envelope = _envelope(message.body)
    added.update(envelope)
    for reserve in (0, 1):  # a compressed body adds its encoding: one more original folded
        room = MAX_ATTRIBUTES - len(added) - reserve
        attributes = {**_fit(originals, invalid, room), **added}
        attributes = {name: _valid(value) for name, value in attributes.items()}
        fitted, attributes = _within_limit(message.body, body, attributes)
        if len(attributes) <= MAX_ATTRIBUTES:
            break
    body = fitted
    request: dict[str, Any] = {
        "QueueUrl": queue_url,
        "MessageBody": body,
        "MessageAttributes": attributes,
    }
    if queue_url.endswith(".fifo"):
        request["MessageGroupId"] = _group_id(message.message_group_id or message_key)
        request["MessageDeduplicationId"] = hashlib.sha256(
            message.delivery_id.encode("utf-8", errors="surrogatepass")
        ).hexdigest()
    return request


def _envelope(raw: bytes) -> tuple[str, dict[str, AttributeValue]]:
    """The body SQS can carry for `raw`, and the attributes that say how to get `raw` back."""
    if not raw:
        return EMPTY_BODY, {BODY_ENCODING_ATTRIBUTE: _string("empty")}
    try:
        text: str | None = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and is_sqs_text(text):
        return text, {}
    return base64.b64encode(raw).decode("ascii"), {BODY_ENCODING_ATTRIBUTE: _string("base64")}


def _within_limit(
    raw: bytes, body: str, attributes: dict[str, AttributeValue]
) -> tuple[str, dict[str, AttributeValue]]:
    """Body and attributes within SQS's 256 KiB: first the largest original attribute values
    become digests, then the body is compressed, then truncated (marked, with its digest)."""
    if _size(body, attributes) <= MAX_MESSAGE_BYTES:
        return body, attributes
    own = {
        "inbox-error-code",
        "inbox-error",
        MESSAGE_KEY_ATTRIBUTE,
        ORIGINAL_SENDER_ATTRIBUTE,
        BODY_ENCODING_ATTRIBUTE,
    }
    by_size = sorted(
        (name for name in attributes if name not in own),
        key=lambda name: _value_bytes(attributes[name]),
        reverse=True,
    )
    attributes = dict(attributes)
    for name in by_size:
        if _size(body, attributes) <= MAX_MESSAGE_BYTES or _value_bytes(attributes[name]) < 200:
            break
        attributes[name] = _digest(attributes[name])
    if _size(body, attributes) <= MAX_MESSAGE_BYTES:
        return body, attributes
    compressed = base64.b64encode(zlib.compress(raw, 9)).decode("ascii")
    attributes[BODY_ENCODING_ATTRIBUTE] = _string("zlib+base64")
    if _size(compressed, attributes) <= MAX_MESSAGE_BYTES:
        return compressed, attributes
    attributes[BODY_ENCODING_ATTRIBUTE] = _string("truncated+base64")
    attributes[BODY_DIGEST_ATTRIBUTE] = _string(hashlib.sha256(raw).hexdigest())
    attributes[BODY_BYTES_ATTRIBUTE] = {"DataType": "Number", "StringValue": str(len(raw))}
    for name in by_size:  # make room for the two body attributes
        if len(attributes) <= MAX_ATTRIBUTES:
            break
        del attributes[name]
    room = MAX_MESSAGE_BYTES - _size("", attributes) - 1024
    head = raw[: max(0, room) * 3 // 4]
    return base64.b64encode(head).decode("ascii") or EMPTY_BODY, attributes


def _size(body: str, attributes: dict[str, AttributeValue]) -> int:
    return len(body.encode("utf-8")) + sum(
        len(name) + len(value["DataType"]) + _value_bytes(value)
        for name, value in attributes.items()
    )


def _value_bytes(value: AttributeValue) -> int:
    if "BinaryValue" in value:
        return len(value["BinaryValue"])
    return len(str(value["StringValue"]).encode("utf-8", errors="surrogatepass"))


def _digest(value: AttributeValue) -> AttributeValue:
    if "BinaryValue" in value:
        raw: bytes = value["BinaryValue"]
    else:
        raw = str(value["StringValue"]).encode("utf-8", errors="surrogatepass")
    return {
        "DataType": DIGEST_STRING,
        "StringValue": f"sha256:{hashlib.sha256(raw).hexdigest()} ({len(raw)} bytes)",
    }


def _usable(value: object) -> bool:
    """An attribute value in SendMessage's shape, with a value SQS can carry (after escaping)."""
    if not isinstance(value, dict) or not isinstance(value.get("DataType"), str):
        return False
    if "BinaryValue" in value:
        return isinstance(value["BinaryValue"], bytes) and bool(value["BinaryValue"])
    return isinstance(value.get("StringValue"), str)


def _valid(value: AttributeValue) -> AttributeValue:
    """`value` as SQS accepts it: a String value with forbidden characters (or none) escaped, a
    data type SQS refuses replaced by `String`, a Number that is not one sent as a String."""
    if "BinaryValue" in value:
        data_type = value["DataType"] if re.fullmatch(_DATA_TYPE, value["DataType"]) else "Binary"
        if not data_type.startswith("Binary"):
            data_type = "Binary"
        return {"DataType": data_type, "BinaryValue": value["BinaryValue"]}
    text: str = value["StringValue"]
    data_type = value["DataType"]
    if not re.fullmatch(_DATA_TYPE, data_type) or data_type.startswith("Binary"):
        data_type = "String"
    if data_type.startswith("Number") and not re.fullmatch(_NUMBER, text):
        data_type = "String"
    if text and is_sqs_text(text):
        return {"DataType": data_type, "StringValue": text}
    return {"DataType": ESCAPED_STRING, "StringValue": json.dumps(text)}


def _group_id(candidate: str) -> str:
    if re.fullmatch(_GROUP_ID, candidate):
        return candidate
    raw = candidate.encode("utf-8", errors="surrogatepass")
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def _fit(
    originals: dict[str, AttributeValue], invalid: dict[str, AttributeValue], room: int
) -> dict[str, AttributeValue]:
    if len(originals) <= room and not invalid:
        return originals
    names = list(originals)
    keep = room - 1
    kept = {name: originals[name] for name in names[:keep]}
    folded = {name: _folded(originals[name]) for name in names[keep:]}
    folded.update({name: _folded(value) for name, value in invalid.items()})
    kept[FOLDED_ATTRIBUTE] = _string(json.dumps(folded, sort_keys=True))
    return kept


def _folded(value: object) -> object:
    """An attribute value inside the folded JSON: its text, or base64 of its bytes."""
    if not isinstance(value, dict):
        return repr(value)
    if isinstance(value.get("BinaryValue"), bytes):
        return base64.b64encode(value["BinaryValue"]).decode("ascii")
    return value.get("StringValue")


def _string(value: str) -> AttributeValue:
    return {"DataType": "String", "StringValue": value}
