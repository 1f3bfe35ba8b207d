"""Message identity: which key makes two deliveries "the same message".

Strategies are tried in order: an explicit extractor (JMESPath expression or callable on the JSON
body), the `idempotency-key` message attribute or Kafka header, the FIFO `MessageDeduplicationId`,
then the delivery id (SQS messageId, Kafka topic-partition-offset). DLQ redrive and producer
retries create new delivery ids, so a business key (an explicit extractor) is the robust choice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .messages import InboundMessage

IDEMPOTENCY_KEY_ATTRIBUTE = "idempotency-key"
#: DynamoDB partition keys are at most 2048 bytes; leave room for the consumer prefix.
MAX_KEY_BYTES = 1024

KeyExtractor = Callable[[Any], object]


class MissingMessageKey(ValueError):
    """The explicit extractor found no usable key in the payload."""


@dataclass(frozen=True)
class MessageIdentity:
    key: str
    strategy: str


class KeyStrategy:
    """Derives the message key. Build one with `KeyStrategy.from_body(...)` or the default."""

    def __init__(self, extractor: KeyExtractor | None = None, *, description: str = "") -> None:
        self._extractor = extractor
        self._description = description or "extractor"

    @classmethod
    def from_body(cls, expression_or_callable: str | KeyExtractor) -> KeyStrategy:
        """Key from the JSON body: a JMESPath expression (`"event_id"`) or a callable."""
        if isinstance(expression_or_callable, str):
            import jmespath  # imported here: only consumers with an expression pay for it

            compiled = jmespath.compile(expression_or_callable)
            return cls(compiled.search, description=f"jmespath:{expression_or_callable}")
        return cls(expression_or_callable, description="callable")

    @property
    def has_extractor(self) -> bool:
        return self._extractor is not None

    def identify(self, message: InboundMessage) -> MessageIdentity:
        """Return the key; raises `MissingMessageKey` or `UndecodableBody` for poison."""
        if self._extractor is not None:
            payload = message.json
            try:
                value = self._extractor(payload)
            except Exception as error:  # e.g. payload["event_id"] on a body without it
                raise MissingMessageKey(
                    f"{self._description} found no message key in the body "
                    f"({type(error).__name__}: {error})"
                ) from None
            if value is None or isinstance(value, (dict, list, bool)) or value == "":
                raise MissingMessageKey(f"{self._description} found no message key in the body")
            return MessageIdentity(_bounded(str(value)), self._description)
        header = message.attributes.get(IDEMPOTENCY_KEY_ATTRIBUTE)
        if header:
            return MessageIdentity(_bounded(header), IDEMPOTENCY_KEY_ATTRIBUTE)
        if message.deduplication_id:
            return MessageIdentity(message.deduplication_id, "deduplication-id")
        return MessageIdentity(message.delivery_id, "delivery-id")


def _bounded(key: str) -> str:
    """Keep keys within DynamoDB's key size: long keys are replaced by their digest."""
    if len(key.encode("utf-8")) <= MAX_KEY_BYTES:
        return key
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def fingerprint(message: InboundMessage) -> str:
    """Hash of the canonical payload: equal for the same JSON whatever its key order or spacing."""
    try:
        canonical = json.dumps(
            message.json, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode("utf-8")
    except ValueError:
        canonical = message.body
    return hashlib.sha256(canonical).hexdigest()
