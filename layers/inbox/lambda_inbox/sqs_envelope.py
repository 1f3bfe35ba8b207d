"""The dead-letter envelope, both ways: how a message's original body and attributes travel in
an SQS dead letter (`send_message_request`), and how the SQS adapter gets them back when the
dead letter is redriven (`body_bytes`, `original_attributes`).

The envelope (docs/bad-input.md, "The dead-letter envelope"):

- Added attributes say why: `inbox-error-code`, `inbox-error`, `inbox-message-key`.
- Body: the original text when SQS accepts it. Otherwise `inbox-body-encoding` says how the body
  carries the original bytes: `base64` (not UTF-8, or characters SQS forbids), `empty` (no bytes
  at all, e.g. a Kafka tombstone: the body is the placeholder `EMPTY_BODY`, since SQS refuses an
  empty one), `zlib+base64` (too large for SQS as it is), or `truncated+base64` (too large even
  compressed: the body holds the first bytes, `inbox-body-sha256` and `inbox-body-bytes` identify
  the original, which stays in its source at the coordinates the other attributes give).
  The SQS adapter decodes all of them on replay (a truncated body is poison again).
- Attributes: SQS allows 10 per message; originals beyond what fits, and any whose name SQS
  would refuse, are folded, not dropped, into one `inbox-original-attributes` JSON attribute. A
  String value SQS would refuse (empty, control characters, lone surrogates) is sent JSON-encoded
  (ASCII, with its quotes) under the data type `String.inbox-escaped`, which the SQS adapter
  decodes on replay. When body and attributes together exceed SQS's 256 KiB, the largest
  attribute values are replaced by their digest before the body is compressed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .identity import MESSAGE_KEY_ATTRIBUTE

if TYPE_CHECKING:
    from .messages import AttributeValue, InboundMessage

#: How to get the original bytes of a dead letter's body back (the module docstring).
BODY_ENCODING_ATTRIBUTE = "inbox-body-encoding"
BODY_DIGEST_ATTRIBUTE = "inbox-body-sha256"  # of the original body, when only its start is kept
BODY_BYTES_ATTRIBUTE = "inbox-body-bytes"
#: The body of a dead letter whose original had no bytes (SQS refuses an empty body).
EMPTY_BODY = "(empty)"
#: Data type of a String attribute value sent JSON-encoded because SQS would refuse it as it is.
ESCAPED_STRING = "String.inbox-escaped"
MAX_ATTRIBUTES = 10
#: SQS's limit for one message: body plus attribute names, data types and values.
MAX_MESSAGE_BYTES = 256 * 1024
MAX_ERROR_CHARS = 1000
FOLDED_ATTRIBUTE = "inbox-original-attributes"
#: Data type of an attribute value replaced by its digest to fit SQS's size limit.
DIGEST_STRING = "String.inbox-digest"
#: Attributes the envelope sets itself: never copied from the original message.
ENVELOPE_ATTRIBUTES = frozenset(
    {BODY_ENCODING_ATTRIBUTE, BODY_DIGEST_ATTRIBUTE, BODY_BYTES_ATTRIBUTE}
)
# Characters SQS accepts in a body; compiled on first use (`re`'s cache): dead letters are rare.
_INVALID_SQS_TEXT = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
# Patterns as text, compiled by `re.fullmatch` on first use (its cache), not at import.
_ATTRIBUTE_NAME = r"(?!\.)(?!.*\.\.)(?!.*\.$)(?!(?i:aws\.|amazon\.))[A-Za-z0-9_.-]{1,256}"
_DATA_TYPE = r"(String|Number|Binary)(\.[A-Za-z0-9_.-]{1,200})?"
_NUMBER = r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"
_GROUP_ID = r"[!-~]{1,128}"


def send_message_request(
    queue_url: str, message: InboundMessage, *, message_key: str, code: str, error: str
) -> dict[str, Any]:
    """The `SendMessage` request for `message`: valid and within SQS's limits whatever the
    message holds (the envelope rules in this module's docstring)."""
    added: dict[str, AttributeValue] = {
        "inbox-error-code": _string(code),
        "inbox-error": _string(error[:MAX_ERROR_CHARS] or code),
        MESSAGE_KEY_ATTRIBUTE: _string(message_key),
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
    own = {"inbox-error-code", "inbox-error", MESSAGE_KEY_ATTRIBUTE, BODY_ENCODING_ATTRIBUTE}
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


def is_sqs_text(text: str) -> bool:
    """True when SQS accepts `text` as a message body or String attribute value."""
    return re.search(_INVALID_SQS_TEXT, text) is None


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


def body_bytes(body: object, attributes: Mapping[str, str]) -> tuple[bytes, str | None]:
    """The body's bytes, decoded from a dead letter's envelope when it carries one; with the
    reason it cannot be used, if any."""
    if not isinstance(body, str):
        return b"", None
    encoding = attributes.get(BODY_ENCODING_ATTRIBUTE)
    try:
        if encoding == "empty" and body == EMPTY_BODY:
            return b"", None
        if encoding == "base64":
            return base64.b64decode(body, validate=True), None
        if encoding == "zlib+base64":
            return zlib.decompress(base64.b64decode(body, validate=True)), None
        if encoding == "truncated+base64":
            size = attributes.get(BODY_BYTES_ATTRIBUTE, "?")
            return (
                base64.b64decode(body, validate=True),
                f"the dead letter holds only the start of the original body ({size} bytes)",
            )
    except (binascii.Error, ValueError, zlib.error):
        pass  # not an envelope after all: the body as delivered
    return body.encode("utf-8", errors="surrogatepass"), None


def original_attributes(raw: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """Lambda's message attribute shape -> SendMessage's, so dead-lettering copies them as-is.
    A value escaped by dead-lettering (`String.inbox-escaped`) is decoded back to the original."""
    converted: dict[str, AttributeValue] = {}
    for name, value in raw.items():
        if not isinstance(value, dict):
            continue
        data_type = value.get("dataType") or value.get("DataType") or "String"
        if not isinstance(data_type, str):
            data_type = "String"
        string = value.get("stringValue")
        if isinstance(string, str):
            if data_type == ESCAPED_STRING:
                try:
                    decoded = json.loads(string)
                except (ValueError, RecursionError):
                    decoded = None
                if isinstance(decoded, str):
                    string, data_type = decoded, "String"
            converted[str(name)] = {"DataType": data_type, "StringValue": string}
        elif isinstance(value.get("binaryValue"), str):
            try:
                binary = base64.b64decode(value["binaryValue"])
            except (binascii.Error, ValueError):
                continue
            converted[str(name)] = {"DataType": data_type, "BinaryValue": binary}
    return converted
