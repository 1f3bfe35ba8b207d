"""The source-neutral view of one delivered record.

SQS and Kafka adapters turn their event records into `InboundMessage`s; everything after that
(identity, decide, commit, dead-lettering) works on this type only.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

from lambda_inbox._errors import ErrorCode, PoisonMessage, UndecodableBody

#: SQS `SendMessage` attribute values: {"DataType": ..., "StringValue" | "BinaryValue": ...}.
AttributeValue = dict[str, Any]


class InboundMessage:
    """One record of a batch, as the inbox sees it (read-only once made).

    `item_identifier` is what goes back in `batchItemFailures`; `delivery_id` is the identity the
    broker gave this delivery (SQS messageId, Kafka topic-partition-offset); `ordering_scope` names
    the sequence whose order matters (a Kafka partition, a FIFO queue or group), None if unordered.

    `dead_letter_attributes` are copied onto the dead-letter message (original attributes, Kafka
    coordinates); `message_group_id` is the FIFO message group, reused when the dead-letter queue
    is FIFO too. `decode_error` is set by the adapter when the envelope could not be decoded (a
    Kafka value not base64; the reason, or the `PoisonMessage` it makes the message): `body`
    then holds the raw text as delivered, and the message is poison. `decode` reads a Kafka value in a binary format (`ValueFormats`) into the payload
    document, raising `UndecodableBody`; None for JSON, which `json` parses. `encoded_record` is
    a binary value's record (Avro or Protobuf, without a Confluent prefix): a fingerprint is of
    its decoded record, read with the consumer's model (identity).
    `source` names the event source (`aws:sqs`, `aws:kafka`, ...) and `sequence` the record's
    position in its ordering scope (a Kafka offset, a stream sequence number); `attributes` are
    the SQS message attributes or Kafka headers as strings; `deduplication_id` is the SQS FIFO
    `MessageDeduplicationId`. `text` is the body as UTF-8 text.
    `redelivered` says the source delivered it before, as far as the adapter can tell (an SQS
    receive count above 1, a Kafka offset seen already, a replayed dead letter): the batch read
    of the inbox keys then comes before the commit (duplicate_read). `envelope` is what wrapped
    the payload (an SNS notification, an EventBridge event, an S3 record: docs/concepts.md,
    "Envelopes"), None for a bare body; key extractors and handlers read it as `current_envelope()`.
    `sender` is the principal whose name space the identities its sender chose live in (SQS's
    `SenderId` up to its first `:`, or the original sender a trusted redriver's copy names), None for a source without senders; `sender_claim` is an original sender
    the message named that was not believed (its identity then cannot be read).
    """

    # A plain class with slots, not a dataclass: defining a dataclass at import is a measurable
    # share of cold start (docs/PERFORMANCE.md), and this one is loaded by every consumer.
    __slots__ = (
        "_json",
        "_text",
        "attributes",
        "body",
        "dead_letter_attributes",
        "decode",
        "decode_error",
        "deduplication_id",
        "delivery_id",
        "encoded_record",
        "envelope",
        "item_identifier",
        "message_group_id",
        "ordering_scope",
        "redelivered",
        "sender",
        "sender_claim",
        "sequence",
        "source",
    )

    def __init__(
        self,
        item_identifier: Any,
        delivery_id: str,
        body: bytes,
        source: str,
        sequence: int,
        attributes: Mapping[str, str] | None = None,
        ordering_scope: str | None = None,
        deduplication_id: str | None = None,
        dead_letter_attributes: Mapping[str, AttributeValue] | None = None,
        message_group_id: str | None = None,
        decode_error: str | PoisonMessage | None = None,
        decode: Callable[[], Any] | None = None,
        encoded_record: bytes | None = None,
        redelivered: bool = False,
        envelope: Any = None,
        sender: str | None = None,
        sender_claim: str | None = None,
    ) -> None:
        self.item_identifier = item_identifier
        self.delivery_id = delivery_id
        self.body = body
        self.source = source
        self.sequence = sequence
        self.attributes: Mapping[str, str] = attributes if attributes is not None else {}
        self.ordering_scope = ordering_scope
        self.deduplication_id = deduplication_id
        self.dead_letter_attributes: Mapping[str, AttributeValue] = (
            dead_letter_attributes if dead_letter_attributes is not None else {}
        )
        self.message_group_id = message_group_id
        self.decode_error = decode_error
        self.decode = decode
        self.encoded_record = encoded_record
        self.redelivered = redelivered
        self.envelope = envelope
        self.sender = sender
        self.sender_claim = sender_claim
        self._text: str | None = None
        self._json: Any = _UNPARSED

    def __repr__(self) -> str:
        return (
            f"InboundMessage({self.source}, {self.delivery_id!r}, "
            f"item_identifier={self.item_identifier!r}, {len(self.body)} bytes)"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InboundMessage) and other._fields() == self._fields()

    __hash__ = None  # type: ignore[assignment]  # equal by value, and mutable mappings inside

    def _fields(self) -> tuple[Any, ...]:
        """What equality compares: every field but `decode` (a function)."""
        return tuple(getattr(self, name) for name in _COMPARED)

    @property
    def text(self) -> str:
        """The body as text; raises `UndecodableBody` when it is not UTF-8 (or its envelope
        could not be decoded)."""
        if self._text is None:
            if self.decode_error:
                raise _poison(self.decode_error)
            try:
                self._text = self.body.decode("utf-8")
            except UnicodeDecodeError as error:
                raise UndecodableBody(f"body is not UTF-8: {error}") from None
        return self._text

    @property
    def json(self) -> Any:
        """The payload document: the JSON body, or the decoded Avro or Protobuf value. A body
        that cannot be read raises the same `PoisonMessage` each time, read once."""
        document = self._json
        if document is _UNPARSED:
            try:
                document = self._json = self._parse()
            except PoisonMessage as poison:  # kept: no JSON document is an exception
                self._json = poison
                raise
        elif isinstance(document, PoisonMessage):
            raise document
        return document

    def _parse(self) -> Any:
        if self.decode is not None and self.decode_error is None:
            return self.decode()
        if self.decode_error:
            raise _poison(self.decode_error)
        body = self.body
        if len(body) > UNCHECKED_BYTES:  # smaller documents are within any limits
            from lambda_inbox._decoding.limits import check_json

            check_json(body)
        fast = _fast_json_reader()
        if fast is not None and len(body) <= FAST_JSON_BYTES:
            try:
                return fast(body)  # the bytes: no text decoded first
            except (ValueError, TypeError):  # refused: `json.loads` reads it, or words why not
                pass
        text = self.text  # not UTF-8: UndecodableBody
        try:
            return json.loads(text)
        except ValueError as error:  # not JSON, or a number past Python's digit limit
            raise UndecodableBody(
                f"body is not JSON: {error}", code=ErrorCode.MALFORMED_JSON
            ) from None
        except RecursionError:
            raise UndecodableBody(
                "body is nested too deeply to parse", code=ErrorCode.MALFORMED_JSON
            ) from None


def _fast_json_reader() -> Callable[[bytes], Any] | None:
    """pydantic's JSON reader (`pydantic_core.from_json`) once pydantic is loaded, as it is for
    a consumer with a pydantic model; None before. It reads a body into the values `json.loads`
    gives (tests/unit/consumer/test_messages.py compares them) and refuses some documents `json.loads`
    reads (a lone surrogate escape, nesting over 200 levels): `_parse` gives those, and every
    invalid body, to `json.loads`. Kept beside `json.loads`: it saves 0.15 M of a 10-message
    batch's 24 M instructions, which keeps the library's own work under its 0.60 M per message
    (docs/PERFORMANCE.md, "The library's shape")."""
    global _from_json
    if _from_json is None:
        _from_json = getattr(sys.modules.get("pydantic_core"), "from_json", None)
    return _from_json


_from_json: Callable[[bytes], Any] | None = None


def _poison(decode_error: str | PoisonMessage) -> PoisonMessage:
    """The poison an adapter's `decode_error` makes a message."""
    return (
        decode_error if isinstance(decode_error, PoisonMessage) else UndecodableBody(decode_error)
    )


#: Bodies of at most this many bytes are within any `DecodingLimits` (the smallest allowed hold
#: them, `decoding.limits`): only larger ones are checked before they are parsed.
UNCHECKED_BYTES = 8 * 1024

#: Bodies longer than Python's integer-string limit (4,300 digits unless changed) may hold a
#: number `json.loads` refuses and pydantic-core before 2.18 reads: they go to `json.loads`
#: alone, so that their fate does not depend on pydantic's version (0: no limit, no such body).
FAST_JSON_BYTES = sys.get_int_max_str_digits() or sys.maxsize

#: The envelope of the message whose key or decision is being computed (`current_envelope`).
CURRENT_ENVELOPE: ContextVar[Any] = ContextVar("lambda_inbox_envelope", default=None)

#: `InboundMessage.json` not parsed yet (None is a valid document).
_UNPARSED = object()
_COMPARED = tuple(
    name for name in InboundMessage.__slots__ if not name.startswith("_") and name != "decode"
)
