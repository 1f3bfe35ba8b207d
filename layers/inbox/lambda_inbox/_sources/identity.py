"""Identify: which key makes two deliveries "the same message", and what its payload hashes to.

Key strategies are tried in order: an explicit extractor (JMESPath expression or callable on the
JSON body), the `idempotency-key` message attribute or Kafka header, the `outbox-message-id`
attribute (the id an outbox relay fixed when the item was written: `lambda_inbox._outbox`), the
FIFO `MessageDeduplicationId`, then the delivery id (SQS messageId, an envelope's id, Kafka
topic-partition-offset). DLQ redrive and producer retries create new delivery ids, so a business
key (an explicit extractor) is the robust choice.

The two attributes are read from the SQS message's attributes (a Kafka record's headers), then
from its envelope's (`Envelope.attributes`: an SNS notification's `MessageAttributes`, an
EventBridge event's `resources`, `outbox_message_id_of`). Every key but an extractor's is in
the message's sender's name space, `<principal>/<id>` (`senders`); an extractor's key is the
application's.

The stage's output is a `Delivery`: the message with its key and fingerprint. A message whose key
cannot be read is still a `Delivery` (under a fallback key) that carries the poison it is.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from collections.abc import Callable
from typing import Any

from lambda_inbox._errors import ErrorCode, MissingMessageKey, PoisonMessage, UndecodableBody
from lambda_inbox._messages import CURRENT_ENVELOPE, InboundMessage
from lambda_inbox._sources.senders import scoped, untrusted_reason

IDEMPOTENCY_KEY_ATTRIBUTE = "idempotency-key"
#: The attribute an outbox relay gives every message: the outbox message id.
OUTBOX_MESSAGE_ID_ATTRIBUTE = "outbox-message-id"
#: An EventBridge event carries the outbox message id as a `resources` entry: this, then the id.
OUTBOX_RESOURCE_PREFIX = OUTBOX_MESSAGE_ID_ATTRIBUTE + ":"
#: Dead-letter attribute holding the key a message was dead-lettered under.
MESSAGE_KEY_ATTRIBUTE = "inbox-message-key"
#: DynamoDB partition keys are at most 2048 bytes; leave room for the consumer prefix.
MAX_KEY_BYTES = 1024
#: The attributes whose value a sender chooses as the key, in the order they are read.
_CHOSEN_ATTRIBUTES = (IDEMPOTENCY_KEY_ATTRIBUTE, OUTBOX_MESSAGE_ID_ATTRIBUTE)

KeyExtractor = Callable[[Any], object]
#: A payload document as the consumer's model reads it, in plain JSON values (`Decider`).
CanonicalForm = Callable[[Any], Any]


class Delivery:
    """One delivered message with its identity (`key`, `fingerprint`); every stage after
    `identify` works on this. `poison` is set when the message can never succeed, found while
    identifying it."""

    __slots__ = ("fingerprint", "key", "message", "poison")

    def __init__(
        self,
        message: InboundMessage,
        key: str,
        fingerprint: str,
        poison: PoisonMessage | None = None,
    ) -> None:
        self.message = message
        self.key = key
        self.fingerprint = fingerprint
        self.poison = poison

    def matches(self, stored_fingerprint: str | None) -> bool:
        """The payload of a stored record is this one (a record without a fingerprint matches)."""
        return stored_fingerprint is None or stored_fingerprint == self.fingerprint

    @property
    def sequence(self) -> int:
        return self.message.sequence


def is_field_path(expression: str) -> bool:
    """A JMESPath expression made of unquoted field names only (`[A-Za-z_][A-Za-z0-9_]*`,
    joined by dots), which a dictionary lookup evaluates exactly as JMESPath does (a missing
    field, or a step into something that is not an object, is None), without JMESPath's parser
    and interpreter on every message. (No regular expression: compiling one costs more cold
    start than this whole module.)"""
    return all(part.isascii() and part.isidentifier() for part in expression.split("."))


def _field_path(names: list[str]) -> KeyExtractor:
    def extract(payload: Any) -> Any:
        for name in names:
            if not isinstance(payload, dict):
                return None
            payload = payload.get(name)
        return payload

    return extract


class KeyStrategy:
    """Derives the message key. Build one with `KeyStrategy.from_body(...)` or the default."""

    def __init__(self, extractor: KeyExtractor | None = None, *, description: str = "") -> None:
        self._extractor = extractor
        self._description = description or "extractor"

    @classmethod
    def from_body(cls, expression_or_callable: str | KeyExtractor) -> KeyStrategy:
        """Key from the JSON body: a JMESPath expression (`"event_id"`) or a callable."""
        if isinstance(expression_or_callable, str):
            description = f"jmespath:{expression_or_callable}"
            if is_field_path(expression_or_callable):  # `event_id`, `detail.id`
                return cls(_field_path(expression_or_callable.split(".")), description=description)
            import jmespath  # imported here: only consumers with an expression pay for it

            compiled = jmespath.compile(expression_or_callable)
            return cls(compiled.search, description=description)
        return cls(expression_or_callable, description="callable")

    @property
    def has_extractor(self) -> bool:
        """Whether the key comes from the payload (`key=` given), not from the delivery."""
        return self._extractor is not None

    def message_key(self, message: InboundMessage) -> str:
        """The message key; raises `PoisonMessage` (`MissingMessageKey`, `UndecodableBody`, an
        untrusted sender's claim) for poison."""
        if self._extractor is None:
            return _delivery_key(message)
        payload = message.json  # UndecodableBody: poison
        envelope = message.envelope
        token = None if envelope is None else CURRENT_ENVELOPE.set(envelope)
        try:
            value = self._extractor(payload)
        except Exception as error:  # e.g. payload["event_id"] on a body without it
            raise MissingMessageKey(
                f"{self._description} found no message key in the body "
                f"({type(error).__name__}: {error}){_wrapper_hint(message, payload)}"
            ) from None
        finally:
            if token is not None:
                CURRENT_ENVELOPE.reset(token)
        if type(value) is str and value:  # the usual key: no conversion
            return bounded_key(value)
        if value is None or isinstance(value, (dict, list, bool)) or value == "":
            hint = _wrapper_hint(message, payload)
            raise MissingMessageKey(f"{self._description} found no message key in the body{hint}")
        return bounded_key(str(value))


def _delivery_key(message: InboundMessage) -> str:
    """The key of a message without a key extractor: the first of the `idempotency-key` or
    `outbox-message-id` attribute (the message's or its envelope's), the FIFO deduplication
    id, the envelope's own id, the delivery id; a key a sender chose is in its name space."""
    carried = None if message.envelope is None else message.envelope.attributes
    for name in _CHOSEN_ATTRIBUTES:
        chosen = message.attributes.get(name) or (carried.get(name) if carried else None)
        if chosen:
            return _senders(message, chosen)
    if message.deduplication_id:
        return _senders(message, message.deduplication_id)
    if message.envelope is not None:  # the delivery id is the body's
        return _senders(message, message.delivery_id)
    return scoped(message.sender, bounded_key(message.delivery_id))


def _wrapper_hint(message: InboundMessage, payload: Any) -> str:
    """Why a key may be missing: the body is an SNS notification or an EventBridge event read by
    a consumer without `envelope=` (the key is inside the wrapper)."""
    if message.envelope is not None or not isinstance(payload, dict):
        return ""
    if payload.get("Type") == "Notification" and {"TopicArn", "Message"} <= payload.keys():
        kind, name = "an SNS notification", "sns"
    elif {"detail-type", "source", "detail", "id"} <= payload.keys():
        kind, name = "an EventBridge event", "eventbridge"
    else:
        return ""
    return f': the body is {kind}; pass envelope="{name}" to InboxConsumer'


def outbox_message_id_of(resources: object) -> str | None:
    """The outbox message id an EventBridge event's `resources` carry (None: none does), for
    an envelope to put in `attributes`."""
    if not isinstance(resources, list):
        return None
    for resource in resources:
        if isinstance(resource, str) and resource.startswith(OUTBOX_RESOURCE_PREFIX):
            return resource[len(OUTBOX_RESOURCE_PREFIX) :] or None
    return None


def identify(
    message: InboundMessage, keys: KeyStrategy, canonical: CanonicalForm | None = None
) -> Delivery:
    """The message's key and fingerprint; any failure to read them makes it poison, never an
    exception that would take the batch down."""
    digest = fingerprint(message, canonical)
    try:
        return Delivery(message, keys.message_key(message), digest)
    except PoisonMessage as poison:
        return Delivery(message, fallback_key(message), digest, poison)
    except Exception as error:  # e.g. RecursionError from a deeply nested body
        unreadable = UndecodableBody(
            f"the body could not be read ({type(error).__name__})", code=ErrorCode.MALFORMED_JSON
        )
        return Delivery(message, fallback_key(message), digest, unreadable)


def fallback_key(message: InboundMessage) -> str:
    """The key of a message whose own key cannot be read: the key it was dead-lettered under
    when it comes back from the DLQ (so a replay updates the same FAILED record) if that key is
    in its sender's name space, else its delivery id in that name space."""
    sender = message.sender
    named = None if message.sender_claim else message.attributes.get(MESSAGE_KEY_ATTRIBUTE)
    if named and sender is None:
        return bounded_key(named)
    if named:
        space, slash, key = named.partition("/")
        if slash and key and space == sender:
            return scoped(sender, bounded_key(key))
    return scoped(sender, bounded_key(message.delivery_id))


def _senders(message: InboundMessage, chosen: str) -> str:
    """`chosen`, an identity the message's sender picked, in that sender's name space; poison
    when the message claims an original sender that was not believed (`senders`)."""
    if message.sender_claim is not None:
        reason = untrusted_reason(message.sender, message.sender_claim)
        raise PoisonMessage(reason, code=ErrorCode.UNTRUSTED_SENDER)
    return scoped(message.sender, bounded_key(chosen))


def bounded_key(key: str) -> str:
    """A key DynamoDB accepts: at most MAX_KEY_BYTES of valid UTF-8, else its digest.

    Lone surrogates (a JSON `\\ud800` escape) cannot be stored as text, so such keys are hashed
    from their `surrogatepass` bytes: still stable for the same input.
    """
    if key.isascii() and 0 < len(key) <= MAX_KEY_BYTES:  # nearly every key: no encoding
        return key
    try:
        encoded = key.encode("utf-8")
    except UnicodeEncodeError:
        encoded = b""
    if encoded and len(encoded) <= MAX_KEY_BYTES:
        return key
    raw = key.encode("utf-8", errors="surrogatepass")
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def fingerprint(message: InboundMessage, canonical: CanonicalForm | None = None) -> str:
    """Hash of the canonical payload: the payload document as JSON with sorted keys and no
    spacing, so equal for the same JSON whatever its key order or spacing.

    An Avro or Protobuf value's document is its decoded record, read by `canonical` (the
    consumer's pydantic model: Protobuf's 64-bit integers, text in its JSON mapping, are numbers
    again, absent defaults are filled in) when given and when the record is valid: the same
    event sent as JSON, Avro or Protobuf, by any encoder, has one fingerprint. A body that is
    not a readable document hashes as delivered."""
    try:
        document = message.json
        if message.encoded_record is not None and canonical is not None:
            # Invalid for the model: poison when decided; meanwhile the decoded record's hash.
            with contextlib.suppress(Exception):
                document = canonical(document)
        text = _canonical_json(document)
        encoded = text.encode("utf-8", errors="surrogatepass")
    except Exception:  # not JSON, not text, too deep, undecodable: the bytes as delivered
        encoded = message.body
    return hashlib.sha256(encoded).hexdigest()


def _plain(value: object) -> object:
    """Decoded values JSON has no type for: bytes as base64 text, sets (a DynamoDB stream
    image's) as sorted lists, the rest (decimals, times, UUIDs) as their text."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, set | frozenset):
        return sorted(value)  # one type per DynamoDB set: comparable, and the order is stable
    return str(value)


#: JSON with sorted keys and no spacing: the canonical form a fingerprint hashes.
_canonical_json = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
).encode
