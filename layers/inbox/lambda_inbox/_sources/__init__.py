"""Event sources behind one small protocol: recognise an event, turn its records into messages,
and build the partial batch response that source expects.

`detect` picks the source of an event or raises `UnsupportedEvent` saying what was received. A
new source plugs in by implementing `EventSource`.

`KafkaSource`, `KinesisSource` and `DynamoDBStreamsSource` live here, their batch semantics in
`kafka` and `streams`, loaded by the first event of their kind: an SQS consumer never imports
them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

from lambda_inbox._errors import UnsupportedEvent
from lambda_inbox._messages import InboundMessage
from lambda_inbox._outcomes import MessageResult

#: What `envelope=` names (docs/concepts.md, "What producers put in a queue"), spelled once.
EnvelopeName = Literal["sns", "eventbridge", "s3"]
ENVELOPES: tuple[EnvelopeName, ...] = get_args(EnvelopeName)

if TYPE_CHECKING:  # protocols type the code only: nothing checks them at run time
    from typing import Protocol

    from lambda_inbox._sources.kinesis import AggregateProgress, KinesisBatch
    from lambda_inbox._sources.values import ValueFormats

    class EventSource(Protocol):
        #: Short name for logs ("sqs", "kafka").
        name: str

        def matches(self, event: Mapping[str, Any]) -> bool:
            """True when `event` comes from this source."""
            ...

        def messages(self, event: Mapping[str, Any]) -> list[InboundMessage]:
            """The event's records, in the order the source delivered them."""
            ...

        def response(self, results: Sequence[MessageResult]) -> BatchResponse:
            """The partial batch response: the records the source must deliver again."""
            ...


BatchResponse = dict[str, list[dict[str, Any]]]
#: Lambda sends "aws:kafka" (MSK) and "SelfManagedKafka"; some sample events spell the latter
#: "aws:SelfManagedKafka". Accepting it costs nothing.
KAFKA_EVENT_SOURCES = ("aws:kafka", "SelfManagedKafka", "aws:SelfManagedKafka")
KINESIS_EVENT_SOURCE = "aws:kinesis"
DYNAMODB_EVENT_SOURCE = "aws:dynamodb"


class KafkaSource:
    """Amazon MSK and self-managed Kafka (`EventSource`; the batch semantics: `kafka`)."""

    name = "kafka"

    def __init__(self, value_formats: ValueFormats | None = None) -> None:
        self._formats = value_formats
        #: The highest offset received per partition in this execution environment.
        self._seen: dict[str, int] = {}

    def matches(self, event: Mapping[str, Any]) -> bool:
        return is_kafka_event(event)

    def messages(self, event: Mapping[str, Any]) -> list[InboundMessage]:
        from lambda_inbox._sources.kafka import parse_kafka_event

        return parse_kafka_event(event, self._formats, self._seen)

    def response(self, results: Sequence[MessageResult]) -> BatchResponse:
        from lambda_inbox._sources.kafka import kafka_response

        return kafka_response(results)


class KinesisSource:
    """Kinesis Data Streams (`EventSource`; the batch semantics: `streams`)."""

    name = "kinesis"

    def __init__(self, value_formats: ValueFormats | None = None) -> None:
        self._formats = value_formats
        #: The highest sequence number received per shard in this execution environment.
        self._seen: dict[str, int] = {}

    def matches(self, event: Mapping[str, Any]) -> bool:
        return _all_records_from(event, KINESIS_EVENT_SOURCE)

    def messages(self, event: Mapping[str, Any]) -> list[InboundMessage]:
        return list(self.batch(event))

    def batch(
        self, event: Mapping[str, Any], progress: AggregateProgress | None = None
    ) -> KinesisBatch:
        """The event's messages, made as they are read (`kinesis`, taken a chunk at a time)."""
        from lambda_inbox._sources.kinesis import KinesisBatch

        return KinesisBatch(event, self._formats, self._seen, progress)

    def response(self, results: Sequence[MessageResult]) -> BatchResponse:
        from lambda_inbox._sources.streams import stream_response

        return stream_response(results)


class DynamoDBStreamsSource:
    """DynamoDB Streams (`EventSource`; the batch semantics and the payload: `streams`)."""

    name = "dynamodb-streams"

    def __init__(self) -> None:
        #: The highest sequence number received per stream in this execution environment.
        self._seen: dict[str, int] = {}

    def matches(self, event: Mapping[str, Any]) -> bool:
        return _all_records_from(event, DYNAMODB_EVENT_SOURCE)

    def messages(self, event: Mapping[str, Any]) -> list[InboundMessage]:
        from lambda_inbox._sources.streams import parse_dynamodb_stream_event

        return parse_dynamodb_stream_event(event, self._seen)

    def response(self, results: Sequence[MessageResult]) -> BatchResponse:
        from lambda_inbox._sources.streams import stream_response

        return stream_response(results)


def _all_records_from(event: Mapping[str, Any], event_source: str) -> bool:
    records = event.get("Records")
    return (
        bool(records)
        and isinstance(records, list)
        and all(
            isinstance(record, dict) and record.get("eventSource") == event_source
            for record in records
        )
    )


def is_kafka_event(event: Mapping[str, Any]) -> bool:
    """MSK or self-managed Kafka, or no `eventSource` but a `records` mapping (a hand-written
    test event)."""
    source = event.get("eventSource")
    return source in KAFKA_EVENT_SOURCES or (
        source is None and isinstance(event.get("records"), dict)
    )


def detect(event: object, sources: Sequence[EventSource]) -> EventSource:
    if isinstance(event, Mapping):
        for source in sources:
            if source.matches(event):
                return source
    raise UnsupportedEvent(
        "expected an SQS, Kinesis or DynamoDB Streams event (Records[].eventSource 'aws:sqs', "
        "'aws:kinesis' or 'aws:dynamodb') or a Kafka event (eventSource 'aws:kafka' or "
        f"'SelfManagedKafka'); received {describe(event)}"
    )


def describe(event: object) -> str:
    """A short, payload-free description of what was received."""
    if isinstance(event, Mapping):
        keys = ", ".join(sorted(str(key) for key in list(event)[:10]))
        source = event.get("eventSource")
        records = event.get("Records")
        if isinstance(records, list) and records and isinstance(records[0], Mapping):
            source = source or records[0].get("eventSource") or records[0].get("EventSource")
        return f"an object with keys [{keys}]" + (f" from {source!r}" if source else "")
    if event is None:
        return "None"
    return f"a {type(event).__name__}"
