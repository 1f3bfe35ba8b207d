"""Kafka values in Avro and Protobuf, as producers write them: for tests, the local stack's
demo and the fuzz tests (`pip install 'lambda-inbox[kafka-codecs]'`).

With `schema_id`, a value is in the Confluent wire format (magic byte 0, the 4-byte schema id;
for Protobuf the message-index list `[0]` follows); without it, the bare encoded record, as an
event source mapping with a schema registry in `SOURCE` mode hands it over.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def confluent_prefix(schema_id: int) -> bytes:
    """Magic byte 0 and the schema id, big-endian, as Confluent's serializers write them."""
    return b"\x00" + schema_id.to_bytes(4, "big")


def avro_value(
    schema: str | Path, record: Mapping[str, Any], *, schema_id: int | None = None
) -> bytes:
    """`record` encoded with the Avro `schema` (its JSON text or an `.avsc` path)."""
    from avro.io import BinaryEncoder, DatumWriter
    from avro.schema import parse

    text = schema.read_text(encoding="utf-8") if isinstance(schema, Path) else schema
    buffer = io.BytesIO()
    DatumWriter(parse(text)).write(dict(record), BinaryEncoder(buffer))
    encoded = buffer.getvalue()
    return encoded if schema_id is None else confluent_prefix(schema_id) + encoded


def protobuf_value(message: Any, *, schema_id: int | None = None) -> bytes:
    """A Protobuf message serialized; with `schema_id`, Confluent's prefix and the message-index
    list `[0]` (the first message of its schema) in front."""
    encoded: bytes = message.SerializeToString()
    return encoded if schema_id is None else confluent_prefix(schema_id) + b"\x00" + encoded


def json_value(record: Mapping[str, Any], *, schema_id: int | None = None) -> bytes:
    """Compact JSON; with `schema_id`, in the Confluent wire format (JSON Schema serializer)."""
    encoded = json.dumps(dict(record), separators=(",", ":")).encode("utf-8")
    return encoded if schema_id is None else confluent_prefix(schema_id) + encoded
