"""The source-neutral view of one delivered record.

SQS and Kafka adapters turn their event records into `InboundMessage`s; everything after that
(identity, decide, commit, dead-lettering) works on this type only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .errors import ErrorCode, UndecodableBody

#: SQS `SendMessage` attribute values: {"DataType": ..., "StringValue" | "BinaryValue": ...}.
AttributeValue = dict[str, Any]


@dataclass(frozen=True)
class InboundMessage:
    """One record of a batch, as the inbox sees it.

    `item_identifier` is what goes back in `batchItemFailures`; `delivery_id` is the identity the
    broker gave this delivery (SQS messageId, Kafka topic-partition-offset); `ordering_scope` names
    the sequence whose order matters (a Kafka partition, a FIFO queue or group), None if unordered.
    """

    item_identifier: Any
    delivery_id: str
    body: bytes
    source: str
    sequence: int
    attributes: Mapping[str, str] = field(default_factory=dict)
    ordering_scope: str | None = None
    deduplication_id: str | None = None
    #: Attributes copied onto the dead-letter message (original attributes, Kafka coordinates).
    dead_letter_attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    #: FIFO message group, reused when the dead-letter queue is FIFO too.
    message_group_id: str | None = None
    #: Set by the adapter when the envelope could not be decoded (e.g. Kafka value not base64);
    #: `body` then holds the raw text as delivered, and the message is poison.
    decode_error: str | None = None
    #: A Kafka value in a binary format (kafka_values): decodes `body` into the payload document,
    #: raising `UndecodableBody`. None for JSON, which `json` parses.
    decode: Callable[[], Any] | None = field(default=None, compare=False)
    #: The bytes the fingerprint hashes instead of the canonical JSON (a binary value's record).
    fingerprint_bytes: bytes | None = None

    @cached_property
    def text(self) -> str:
        if self.decode_error:
            raise UndecodableBody(self.decode_error)
        try:
            return self.body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise UndecodableBody(f"body is not UTF-8: {error}") from None

    @cached_property
    def json(self) -> Any:
        """The payload document: the JSON body, or the decoded Avro or Protobuf value."""
        if self.decode is not None and self.decode_error is None:
            return self.decode()
        try:
            return json.loads(self.text)
        except json.JSONDecodeError as error:
            raise UndecodableBody(
                f"body is not JSON: {error}", code=ErrorCode.MALFORMED_JSON
            ) from None
        except RecursionError:
            raise UndecodableBody(
                "body is nested too deeply to parse", code=ErrorCode.MALFORMED_JSON
            ) from None
