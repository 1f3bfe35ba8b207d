"""The dead-letter envelope, read back: how the SQS adapter gets a redriven dead letter's
original body and attributes (`body_bytes`, `original_attributes`), and which text SQS accepts
(`is_sqs_text`). Writing the envelope is `dead_letter.envelope`, loaded by the first dead letter.

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
import json
import re
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lambda_inbox._internal import SQS_MAX_ATTRIBUTES, SQS_MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from lambda_inbox._errors import PoisonMessage
    from lambda_inbox._messages import AttributeValue

#: How to get the original bytes of a dead letter's body back (the module docstring).
BODY_ENCODING_ATTRIBUTE = "inbox-body-encoding"
BODY_DIGEST_ATTRIBUTE = "inbox-body-sha256"  # of the original body, when only its start is kept
BODY_BYTES_ATTRIBUTE = "inbox-body-bytes"
#: The body of a dead letter whose original had no bytes (SQS refuses an empty body).
EMPTY_BODY = "(empty)"
#: Data type of a String attribute value sent JSON-encoded because SQS would refuse it as it is.
ESCAPED_STRING = "String.inbox-escaped"
MAX_ATTRIBUTES = SQS_MAX_ATTRIBUTES
MAX_MESSAGE_BYTES = SQS_MAX_MESSAGE_BYTES
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


def is_sqs_text(text: str) -> bool:
    """True when SQS accepts `text` as a message body or String attribute value."""
    return re.search(_INVALID_SQS_TEXT, text) is None


def body_bytes(
    body: object, attributes: Mapping[str, str]
) -> tuple[bytes, str | PoisonMessage | None]:
    """The body's bytes, decoded from a dead letter's envelope when it carries one; with the
    reason it cannot be used (or the poison it is: `too_large` past the consumer's
    `DecodingLimits`, the body then kept as delivered), if any."""
    if not isinstance(body, str):
        return b"", None
    encoding = attributes.get(BODY_ENCODING_ATTRIBUTE) if attributes else None
    if encoding is None:  # nearly every message: the body as delivered
        return body.encode("utf-8", errors="surrogatepass"), None
    try:
        if encoding == "empty" and body == EMPTY_BODY:
            return b"", None
        if encoding == "base64":
            return base64.b64decode(body, validate=True), None
        if encoding == "zlib+base64":
            from lambda_inbox._decoding.limits import TooLarge, inflate

            try:
                return inflate(base64.b64decode(body, validate=True)), None
            except TooLarge as poison:
                return body.encode("utf-8", errors="surrogatepass"), poison
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
