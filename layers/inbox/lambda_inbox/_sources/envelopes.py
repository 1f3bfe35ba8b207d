"""SQS bodies wrapped by the producer that fed the queue (`InboxConsumer(..., envelope=...)`):
an SNS notification, an EventBridge event, an S3 event notification (docs/concepts.md, "What
producers put in a queue"). Loaded by the first batch of a consumer with an envelope.

Each wrapper is checked with Powertools' parser model of it (`SnsNotificationModel`,
`EventBridgeModel`, `S3Model`); the payload handed on is the document as delivered (the
notification's `Message` parsed, the event's `detail`, one S3 record), never the model's copy.

- `"sns"`: payload the JSON `Message`, delivery id the notification's `MessageId` (SNS's
  redelivery under a new SQS `messageId` is then a duplicate). A body that is not a notification
  (raw message delivery on) is the message itself, delivery id the SQS `messageId`. The
  notification's String `MessageAttributes` are `Envelope.attributes`: an `idempotency-key` or
  `outbox-message-id` there is the key when the SQS message has none (`identity`). They never
  become the message's attributes, so a body cannot set what the library reads there (a dead
  letter's `inbox-*` attributes).
- `"eventbridge"`: payload `detail`, delivery id the event's `id`. The outbox message id an
  outbox relay put in the event's `resources` (`outbox-message-id:<id>`) is
  `Envelope.attributes`' `outbox-message-id`, so a receiver with no key configured dedupes a
  relayed event by it.

Every identity read from the body (the delivery id, and those attributes) is the SQS sender's,
as the SQS message's own are (`senders`): a body can name only its own sender's messages.
- `"s3"`: each record a message, payload the record, delivery id `"<bucket>/<key>#<sequencer>"`
  (the key as S3 sends it, URL-encoded; without a sequencer, `eventName@eventTime`). An
  `s3:TestEvent` is acknowledged with no message at all.

A body that is not its envelope is one poison message under the SQS `messageId`, code
`envelope_mismatch`, its whole body dead-lettered. Every message of an SQS message keeps that
message's body, so a dead letter is the whole SQS body: redriven, it is read the same way.
`current_envelope()` gives key extractors and handlers the envelope's own fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from lambda_inbox._errors import ErrorCode, PoisonMessage, UndecodableBody
from lambda_inbox._messages import CURRENT_ENVELOPE, UNCHECKED_BYTES, InboundMessage
from lambda_inbox._sources import ENVELOPES, EnvelopeName
from lambda_inbox._sources.identity import OUTBOX_MESSAGE_ID_ATTRIBUTE, outbox_message_id_of

#: Left out of `Envelope.fields`: they are the payload.
_PAYLOAD_FIELDS = {"sns": "Message", "eventbridge": "detail"}
S3_TEST_EVENT = "s3:TestEvent"


@dataclass(frozen=True, slots=True)
class Envelope:
    """What wrapped the message being handled: `kind` ("sns", "eventbridge", "s3"), its
    `delivery_id`, and `fields`, the wrapper's other fields as AWS names them (SNS: `TopicArn`,
    `Subject`, `Timestamp`, `MessageAttributes`...; EventBridge: `source`, `detail-type`, `time`,
    `resources`...; S3: none beyond the record, which is the payload)."""

    kind: str
    delivery_id: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    @property
    def attributes(self) -> dict[str, str]:
        """The attributes the envelope carries: an SNS notification's `MessageAttributes` as
        name -> `Value`; an EventBridge event's outbox message id (from its `resources`) as
        `outbox-message-id`; nothing otherwise. Key extractors and handlers read them here; the
        library reads only `idempotency-key` and `outbox-message-id` of them (`identity`)."""
        if self.kind == "eventbridge":
            relayed = outbox_message_id_of(self.fields.get("resources"))
            return {} if relayed is None else {OUTBOX_MESSAGE_ID_ATTRIBUTE: relayed}
        raw = self.fields.get("MessageAttributes")
        if not isinstance(raw, Mapping):
            return {}
        return {
            str(name): value["Value"]
            for name, value in raw.items()
            if isinstance(value, Mapping) and isinstance(value.get("Value"), str)
        }


def current_envelope() -> Envelope | None:
    """The envelope of the message whose key is being read or whose decision is being made
    (inside a key extractor, `decide` or `on_condition_failed`); None for a consumer without an
    envelope, a raw SNS delivery, and outside those calls."""
    envelope = CURRENT_ENVELOPE.get()
    return envelope if isinstance(envelope, Envelope) else None


def unwrap(kind: EnvelopeName, message: InboundMessage) -> list[InboundMessage]:
    """The messages an SQS message wrapped in `kind` carries (none for an S3 test event)."""
    if message.decode_error is not None or message.decode is not None:
        return [message]  # not JSON text, or a Kafka or stream record sent again: as it is
    try:
        _within_limits(message.body)
        document = json.loads(message.body)
    except PoisonMessage as too_large:
        message.decode_error = too_large
        return [message]
    except (ValueError, RecursionError):
        document = None
    if kind == "sns":
        return [_sns(message, document)]
    if kind == "eventbridge":
        return [_eventbridge(message, document)]
    return _s3(message, document)


def _sns(message: InboundMessage, document: Any) -> InboundMessage:
    if not (isinstance(document, dict) and document.get("Type") == "Notification"):
        return message  # raw message delivery: the body is the message
    problem = _refused(_model("sns"), document)
    if problem:
        return _mismatch(message, f"not an SNS notification ({problem})")
    envelope = _envelope("sns", document["MessageId"], document)
    return _derived(message, envelope, _json_text(document["Message"]))


def _eventbridge(message: InboundMessage, document: Any) -> InboundMessage:
    problem = _refused(_model("eventbridge"), document)
    if problem:
        return _mismatch(message, f"not an EventBridge event ({problem})")
    envelope = _envelope("eventbridge", document["id"], document)
    return _derived(message, envelope, _constant(document["detail"]))


def _s3(message: InboundMessage, document: Any) -> list[InboundMessage]:
    if isinstance(document, dict) and document.get("Event") == S3_TEST_EVENT:
        return []
    problem = _refused(_model("s3"), document)
    if problem:
        return [_mismatch(message, f"not an S3 event notification ({problem})")]
    messages = []
    for record in document["Records"]:
        s3 = record["s3"]
        item = s3.get("object") or {}
        position = item.get("sequencer") or f"{record['eventName']}@{record['eventTime']}"
        delivery_id = f"{s3['bucket']['name']}/{item.get('key', '')}#{position}"
        messages.append(_derived(message, _envelope("s3", delivery_id, {}), _constant(record)))
    return messages


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def _json_text(text: str) -> Callable[[], Any]:
    def parse() -> Any:
        _within_limits(text.encode("utf-8", errors="surrogatepass"))
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            raise UndecodableBody(
                "the notification's Message is not JSON", code=ErrorCode.MALFORMED_JSON
            ) from None

    return parse


def _within_limits(document: bytes) -> None:
    """`TooLarge` for a JSON document past the consumer's `DecodingLimits`."""
    if len(document) > UNCHECKED_BYTES:
        from lambda_inbox._decoding.limits import check_json

        check_json(document)


def _envelope(kind: str, delivery_id: str, document: Mapping[str, Any]) -> Envelope:
    payload = _PAYLOAD_FIELDS.get(kind)
    return Envelope(kind, delivery_id, {k: v for k, v in document.items() if k != payload})


def _derived(
    message: InboundMessage, envelope: Envelope | None, decode: Callable[[], Any]
) -> InboundMessage:
    """A message of `message`'s SQS message: its payload `decode`, its delivery id the
    envelope's (the SQS message's without one); the body, the coordinates, the attributes, the
    sender and the dead-letter attributes of the SQS message."""
    return InboundMessage(
        item_identifier=message.item_identifier,
        delivery_id=message.delivery_id if envelope is None else envelope.delivery_id,
        body=message.body,
        source=message.source,
        sequence=message.sequence,
        attributes=message.attributes,
        ordering_scope=message.ordering_scope,
        deduplication_id=message.deduplication_id,
        dead_letter_attributes=message.dead_letter_attributes,
        message_group_id=message.message_group_id,
        decode=decode,
        redelivered=message.redelivered,
        envelope=envelope,
        sender=message.sender,
        sender_claim=message.sender_claim,
    )


def _mismatch(message: InboundMessage, reason: str) -> InboundMessage:
    """`message` as poison `envelope_mismatch`, under its SQS `messageId`."""

    def refuse() -> Any:
        raise UndecodableBody(reason, code=ErrorCode.ENVELOPE_MISMATCH)

    return _derived(message, None, refuse)


def _refused(model: Any, document: Any) -> str | None:
    """None when `model` accepts `document`; else which fields it refused (no values)."""
    if not isinstance(document, dict):
        return "the body is not a JSON object"
    try:
        model.model_validate(dict(document))  # the SNS model renames keys of what it is given
    except ValueError as error:  # pydantic's ValidationError: which fields, never their values
        details = error.errors(include_input=False) if hasattr(error, "errors") else []
        fields = sorted({".".join(str(part) for part in item["loc"]) for item in details})
        return "refused: " + (", ".join(fields[:10]) or "<root>")
    except Exception as error:  # a model's own validator tripping over a missing field
        return f"refused ({type(error).__name__})"
    return None


@cache
def _model(kind: EnvelopeName) -> Any:
    """Powertools' parser model of `kind`, imported on first use, only the one the consumer
    reads (their cost at cold start: docs/PERFORMANCE.md, "Envelopes")."""
    from aws_lambda_powertools.utilities.parser import models

    return {
        "sns": models.SnsNotificationModel,
        "eventbridge": models.EventBridgeModel,
        "s3": models.S3Model,
    }[kind]


#: Powertools' parser envelopes (`aws_lambda_powertools.utilities.parser.envelopes`), by their
#: module and class name, so recognising one imports nothing of Powertools: what each means for an
#: inbox consumer (the envelope name whose delivery identity it gets), and whether the model
#: reads each image of a stream record (`DynamoDBStreamEnvelope`) rather than the document.
_POWERTOOLS = "aws_lambda_powertools.utilities.parser.envelopes."
POWERTOOLS_ENVELOPES: dict[str, tuple[EnvelopeName | None, bool]] = {
    "sns.SnsSqsEnvelope": ("sns", False),
    "event_bridge.EventBridgeEnvelope": ("eventbridge", False),
    "sqs.SqsEnvelope": (None, False),
    "kinesis.KinesisDataStreamEnvelope": (None, False),
    "kafka.KafkaEnvelope": (None, False),
    "dynamodb.DynamoDBStreamEnvelope": (None, True),
}


def envelope_setting(value: object) -> tuple[EnvelopeName | None, bool]:
    """`InboxConsumer(envelope=value)` as the envelope name and whether the model reads each
    image: a name of `ENVELOPES`, None, or one of Powertools' envelopes (the class or an
    instance; never called: the delivery identity stays the library's). Anything else is a
    `ConfigurationError` listing what is accepted."""
    if value is None or value in ENVELOPES:
        return value, False
    kind = value if isinstance(value, type) else type(value)
    found = POWERTOOLS_ENVELOPES.get(
        f"{kind.__module__}.{kind.__qualname__}".removeprefix(_POWERTOOLS)
    )
    if found is not None and kind.__module__.startswith(_POWERTOOLS):
        return found
    accepted = ", ".join(name.partition(".")[2] for name in POWERTOOLS_ENVELOPES)
    got = repr(value)
    if kind.__qualname__ == "SnsEnvelope":
        got += (
            ": it is for a function SNS invokes; an inbox reads the queue subscribed to the topic"
        )
    for base in kind.__mro__[1:]:
        if (
            f"{base.__module__}.{base.__qualname__}".removeprefix(_POWERTOOLS)
            in POWERTOOLS_ENVELOPES
        ):
            got += f", a subclass of {base.__qualname__} (its parse may differ: pass {base.__qualname__})"
            break
    from lambda_inbox._errors import ConfigurationError

    raise ConfigurationError(
        f'envelope must be "sns", "eventbridge", "s3", None, or one of Powertools\' {accepted}; '
        f"got {got}"
    )
