"""Reading the fields of a broker's record defensively, shared by the Kafka and stream adapters:
base64 that may not be base64, raw values kept as delivered, dead-letter attribute values."""

from __future__ import annotations

import base64
import binascii
import json

from lambda_inbox._messages import AttributeValue

#: What a Kinesis record aggregated by the Kinesis Producer Library starts with (`aggregation`).
KPL_MAGIC = b"\xf3\x89\x9a\xc2"


def base64_bytes(value: object) -> bytes | None:
    """The bytes of a base64 text; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def raw_text(raw: object) -> bytes:
    """A value that is not base64, as delivered (JSON for what is not even a string)."""
    if raw is None:
        return b""
    if isinstance(raw, str):
        return raw.encode("utf-8", errors="surrogatepass")
    try:
        return json.dumps(raw).encode("ascii")
    except (TypeError, ValueError, RecursionError):
        return repr(raw).encode("utf-8", errors="surrogatepass")


def string_attribute(value: str) -> AttributeValue:
    """A String message attribute of a dead letter."""
    return {"DataType": "String", "StringValue": value}
