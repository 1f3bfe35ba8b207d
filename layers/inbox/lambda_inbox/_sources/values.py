"""Kafka record values in JSON, Avro or Protobuf, decoded before the model sees them.

A consumer says which formats it reads with `ValueFormats` (`SourceSettings(value_formats=...)`).
Which format one record is in:

1. the event source's `valueSchemaMetadata.dataFormat` (`JSON`, `AVRO`, `PROTOBUF`), set when
   the event source mapping has a schema registry and hands the function the source bytes; the
   Confluent prefix is already stripped then;
2. otherwise the value itself: a value in the Confluent wire format (magic byte 0, a 4-byte
   schema id, then the record; for Protobuf the message indexes first) is JSON when a `{`
   follows the prefix, else the binary format the consumer reads (when it reads both, Protobuf
   when the byte after the schema id is 0, the message-index list `[0]`, else Avro);
3. otherwise the consumer's `default` (JSON unless configured).

The decoding is bounded (`limits`: a value past `DecodingLimits` is poison `too_large`): Avro
with avro's reader, each value counted as it is read (`decoding.avro_reader`); Protobuf with
Powertools' Kafka deserializer, after a record large enough to pass `max_values` has been counted
on the wire (`decoding.protobuf_count`, which also takes its Confluent or Glue framing off); all
loaded on the first binary value (extras `kafka-consumer-avro` and
`kafka-consumer-protobuf`). A value that does not decode is poison (`undecodable_value`):
dead-lettered with its original bytes and the format it was read as, never a partition stall. The fingerprint of a binary value is the hash of its decoded record
(identity.fingerprint), so the same event in JSON, Avro or Protobuf, framed or not, replayed or
not, is a duplicate.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from lambda_inbox._errors import ConfigurationError, ErrorCode, UndecodableBody, truncate
from lambda_inbox._internal import _Settings
from lambda_inbox._messages import UNCHECKED_BYTES

Format = Literal["JSON", "AVRO", "PROTOBUF"]
FORMATS: tuple[Format, ...] = ("JSON", "AVRO", "PROTOBUF")
#: Dead-letter attribute: the format a Kafka value was read as (absent for JSON), so that a
#: replay through SQS reads the same bytes the same way.
FORMAT_ATTRIBUTE = "kafka-value-format"
#: Dead-letter attribute: the Confluent or Glue schema id, when there was one.
SCHEMA_ID_ATTRIBUTE = "kafka-value-schema-id"
_MAGIC = 0
_PREFIX = 5


@functools.cache
def _message_class(given: Any) -> type[Any]:
    """The class a `protobuf_message` names: itself, or what its function returns (called
    once per function: classes and functions are hashable)."""
    message_class: type[Any] = given if isinstance(given, type) else given()
    return message_class


@dataclass(frozen=True, slots=True)
class EncodedValue:
    """One value as delivered: its format, the encoded record (prefix stripped) and schema id."""

    format: Format
    record: bytes
    schema_id: str | None = None
    indexed: bool = False
    """The Protobuf message indexes are still in front of the record (Confluent framing)."""


class ValueFormats(_Settings):
    """The formats a consumer reads. `avro_schema` is the schema's JSON text (or a path to an
    `.avsc` file); `protobuf_message` the generated message class, or a function returning it
    (called on the first Protobuf value, so that a cold start does not load the Protobuf
    runtime); `default` the format of a value that neither metadata nor a Confluent prefix
    describes."""

    __slots__ = ("avro_schema", "default", "protobuf_message")
    avro_schema: str | None
    protobuf_message: type[Any] | Callable[[], type[Any]] | None
    default: Format

    def __init__(
        self,
        avro_schema: str | Path | None = None,
        protobuf_message: type[Any] | Callable[[], type[Any]] | None = None,
        default: Format = "JSON",
    ) -> None:
        if isinstance(avro_schema, Path):
            avro_schema = avro_schema.read_text(encoding="utf-8")
        if default not in FORMATS:
            raise ConfigurationError(f"default must be one of {FORMATS}, not {default!r}")
        if default == "AVRO" and avro_schema is None:
            raise ConfigurationError("default 'AVRO' needs avro_schema")
        if default == "PROTOBUF" and protobuf_message is None:
            raise ConfigurationError("default 'PROTOBUF' needs protobuf_message")
        if avro_schema is not None:
            _require("avro", "kafka-consumer-avro")
            try:
                json.loads(str(avro_schema))
            except json.JSONDecodeError as error:
                raise ConfigurationError(f"avro_schema is not JSON: {error}") from None
        if protobuf_message is not None:
            _require("google.protobuf", "kafka-consumer-protobuf")
        self.avro_schema = avro_schema
        self.protobuf_message = protobuf_message
        self.default = default

    def classify(self, value: bytes, metadata: object = None) -> EncodedValue:
        """Which format `value` is in, and its record bytes (see the module docstring)."""
        if isinstance(metadata, Mapping):
            declared = str(metadata.get("dataFormat") or "").upper()
            if declared in FORMATS:
                schema_id = metadata.get("schemaId")
                return EncodedValue(
                    declared,
                    value,
                    str(schema_id) if schema_id else None,
                    indexed=declared == "PROTOBUF" and bool(schema_id),
                )
        if len(value) > _PREFIX and value[0] == _MAGIC:
            schema_id = str(int.from_bytes(value[1:_PREFIX], "big"))
            record = value[_PREFIX:]
            if record[:1] == b"{":
                return EncodedValue("JSON", record, schema_id)
            if self.protobuf_message is not None and (
                self.avro_schema is None or record[0] == _MAGIC
            ):
                return EncodedValue("PROTOBUF", record, schema_id, indexed=True)
            if self.avro_schema is not None:
                return EncodedValue("AVRO", record, schema_id)
        return EncodedValue(self.default, value)

    def protobuf_class(self) -> type[Any]:
        """The Protobuf message class, resolved once."""
        if self.protobuf_message is None:
            raise ConfigurationError("no protobuf_message (ValueFormats)")
        return _message_class(cast("Hashable", self.protobuf_message))

    def decode(self, encoded: EncodedValue) -> Any:
        """The payload document of a Kafka value or Kinesis data in JSON, Avro or Protobuf;
        raises `UndecodableBody` (`undecodable_value`) when it does not decode, `TooLarge`
        (`too_large`) past the consumer's `DecodingLimits`."""
        record = encoded.record
        if encoded.format == "JSON":
            if len(record) > UNCHECKED_BYTES:
                from lambda_inbox._decoding.limits import check_json

                check_json(record)
            try:
                return json.loads(record.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError) as error:
                raise UndecodableBody(
                    f"value is not JSON ({type(error).__name__})", code=ErrorCode.MALFORMED_JSON
                ) from None
        if encoded.format == "AVRO" and self.avro_schema is None:
            raise _undecodable(encoded, "this consumer has no Avro schema (ValueFormats)")
        if encoded.format == "PROTOBUF" and self.protobuf_message is None:
            raise _undecodable(encoded, "this consumer has no Protobuf message (ValueFormats)")
        from lambda_inbox._decoding.limits import TooLarge

        try:
            if encoded.format == "AVRO":
                from lambda_inbox._decoding.avro_reader import read_avro

                return read_avro(str(self.avro_schema), record)
            from lambda_inbox._decoding.protobuf_count import protobuf_record

            framed = protobuf_record(record, encoded.schema_id, indexed=encoded.indexed)
            return self._read_protobuf(framed)
        except TooLarge:
            raise
        except Exception as error:  # avro's and protobuf's errors for bytes that do not decode
            raise _undecodable(encoded, f"{type(error).__name__}: {error}") from None

    def _read_protobuf(self, record: bytes) -> Any:
        """A Protobuf record (its framing off): counted on the wire when it is large enough to
        pass the limit, then read by Powertools' deserializer."""
        from aws_lambda_powertools.utilities.kafka.deserializer.deserializer import (
            get_deserializer,  # Powertools' Protobuf reader, loaded on first use
        )

        from lambda_inbox._decoding.limits import Budget, check_bytes, current_limits

        check_bytes(len(record), "the Protobuf record")
        message_class = self.protobuf_class()
        if len(record) > current_limits().max_values:  # each value takes a byte at least
            from lambda_inbox._decoding.protobuf_count import count_values

            count_values(record, message_class.DESCRIPTOR, Budget())
        reader = get_deserializer("PROTOBUF", message_class, None)
        return reader.deserialize(base64.b64encode(record).decode("ascii"))


def generated_message(path: Path, name: str) -> Callable[[], type[Any]]:
    """A `protobuf_message` for `ValueFormats` that loads class `name` from the generated module
    at `path` (a `*_pb2.py` beside the function) on the first Protobuf value, not at import: a
    cold start then loads no Protobuf runtime. By path, so it needs no package on `sys.path`."""

    def load() -> type[Any]:
        import importlib.util

        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise ConfigurationError(f"cannot load the generated Protobuf module {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        message: type[Any] = getattr(module, name)
        return message

    return load


def _require(module: str, extra: str) -> None:
    """Fail at start-up, not on the first record, when the codec library is missing (a layer
    without it): checked without importing it."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        raise ConfigurationError(
            f"reading these values needs the {module!r} package: "
            f"pip install 'aws-lambda-powertools[{extra}]' (or the codecs layer)"
        )


def read_value(
    value: bytes | None,
    metadata: object,
    formats: ValueFormats | None,
    dead_letter: dict[str, dict[str, str]],
) -> dict[str, Any]:
    """How a Kafka value (also one replayed through SQS) is read: nothing to add for a plain
    JSON value; otherwise its decoder and encoded record, and the dead-letter attributes
    that let a replay of the same bytes read them the same way."""
    if value is None:
        return {}
    formats = formats or JSON_ONLY
    encoded = formats.classify(value, metadata)
    if encoded.format == "JSON" and encoded.record is value:
        return {}
    if isinstance(metadata, Mapping) and encoded.format != "JSON":
        dead_letter[FORMAT_ATTRIBUTE] = {"DataType": "String", "StringValue": encoded.format}
        if encoded.schema_id:
            dead_letter[SCHEMA_ID_ATTRIBUTE] = {
                "DataType": "String",
                "StringValue": encoded.schema_id,
            }
    return {
        "decode": functools.partial(formats.decode, encoded),
        "encoded_record": encoded.record if encoded.format != "JSON" else None,
    }


def _undecodable(encoded: EncodedValue, reason: str) -> UndecodableBody:
    return UndecodableBody(
        truncate(f"{encoded.format} value does not decode: {reason}"),
        code=ErrorCode.UNDECODABLE_VALUE,
    )


#: What a consumer reads when it says nothing: JSON only, as before value formats existed.
JSON_ONLY = ValueFormats()
