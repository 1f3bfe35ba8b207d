"""`InboxBatchProcessor`: a Powertools batch handler moved to the inbox by changing its processor.

    processor = InboxBatchProcessor(EventType.SQS, name="orders", key="event_id")

    def record_handler(record: SQSRecord, uow: UnitOfWork) -> None:
        uow.put(TABLE, {...})

    def handler(event, context):
        return process_partial_response(event, record_handler, processor, context)

Powertools calls the processor with the batch's records; the processor hands the whole batch to
one `InboxConsumer`, so its records keep group commit (a new 10-record SQS batch is one
`TransactWriteItems`), and the record handler is the consumer's `decide`: it gets the record as
Powertools gives it (`SQSRecord`, `KinesisStreamRecord`, `DynamoDBRecord`, `KafkaEventRecord`, or
the processor's `model`) and the unit of work its writes commit in, with the inbox record.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, cast

from aws_lambda_powertools.utilities.batch import EventType
from aws_lambda_powertools.utilities.batch.base import BasePartialBatchProcessor
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from lambda_inbox._commit.decision import MessageReader
from lambda_inbox._consumer import InboxConsumer
from lambda_inbox._errors import ConfigurationError, InboxError

if TYPE_CHECKING:
    from collections.abc import Callable

    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.parser.envelopes.base import BaseEnvelope

    from lambda_inbox._commit.unit_of_work import UnitOfWork
    from lambda_inbox._config import InboxConfig
    from lambda_inbox._messages import InboundMessage
    from lambda_inbox._options import Clients, Observability
    from lambda_inbox._sources import EnvelopeName
    from lambda_inbox._sources.identity import KeyExtractor, KeyStrategy

#: The first Powertools whose batch utility reads Kafka events (`EventType.Kafka`).
KAFKA_POWERTOOLS = "3.26.0"


class RecordNotCommitted(InboxError):
    """A record the inbox reported for redelivery (its reason is in the consumer's log line)."""


class InboxBatchProcessor(BasePartialBatchProcessor):
    """A Powertools batch processor whose records commit through the inbox, a batch at a time.

    `event_type`: Powertools' `EventType` (or its name: `"Kafka"` needs Powertools
    3.26.0 or later). `model`: Powertools' record model (`SqsRecordModel` ...), as for
    `BatchProcessor`; a record it refuses is poison (`invalid_payload`, dead-lettered with its
    body). `name`, `key`, `envelope`, `clients`, `observability`, `config`: `InboxConsumer`'s.
    The consumer is `self.consumer`. `raise_on_entire_batch_failure`: as for `BatchProcessor`.
    """

    def __init__(
        self,
        event_type: EventType | str,
        *,
        name: str,
        model: Any = None,
        key: str | KeyExtractor | KeyStrategy | None = None,
        envelope: EnvelopeName | BaseEnvelope | type[BaseEnvelope] | None = None,
        clients: Clients | None = None,
        observability: Observability | None = None,
        config: InboxConfig | None = None,
        raise_on_entire_batch_failure: bool = True,
    ) -> None:
        super().__init__(_event_type(event_type), model, raise_on_entire_batch_failure)
        self.consumer: InboxConsumer[Any] = InboxConsumer(
            name,
            model=MessageReader(self._record),
            decide=self._decide,
            key=key,
            envelope=envelope,
            clients=clients,
            observability=observability,
            config=config,
        )
        """The consumer the batches go through."""
        self._raw: dict[Hashable, dict[str, Any]] = {}
        self._given: dict[Hashable, Any] = {}
        self._passes_context = False

    def __call__(
        self, records: list[dict[str, Any]], handler: Callable[..., Any], lambda_context: Any = None
    ) -> InboxBatchProcessor:
        _require_uow(handler)
        super().__call__(records, handler, lambda_context)
        self._passes_context = bool(getattr(self, "_handler_accepts_lambda_context", False))
        return self

    def process(self) -> list[tuple[str, Any, Any]]:
        """The whole batch through the consumer; `success_messages`, `fail_messages` and
        `exceptions` filled as Powertools' processors fill them."""
        self._raw = {_identifier(self.event_type, raw): raw for raw in self.records}
        self._given = {}
        event = _event(self.event_type, self.records)
        response = self.consumer.handle(event, getattr(self, "lambda_context", None))
        self.batch_response = cast("PartialItemFailureResponse", response)
        failed = {_hashable(item["itemIdentifier"]) for item in response["batchItemFailures"]}
        entries: list[tuple[str, Any, Any]] = []
        for identifier, raw in self._raw.items():
            record = self._given.get(identifier) or self._to_batch_type(raw, self.event_type)
            if identifier in failed:
                error = RecordNotCommitted(f"record {identifier} reported for redelivery")
                entries.append(self.failure_handler(record, (type(error), error, None)))
            else:
                entries.append(self.success_handler(record, None))
        return entries

    def _record(self, message: InboundMessage) -> Any:
        """The record of `message` as Powertools gives it to the handler (the model's refusal
        is the message's `invalid_payload`)."""
        identifier = _hashable(message.item_identifier)
        record = self._to_batch_type(self._raw[identifier], self.event_type, self.model)
        self._given[identifier] = record
        return record

    def _decide(self, record: Any, uow: UnitOfWork) -> None:
        if self._passes_context:
            self.handler(record=record, uow=uow, lambda_context=self.lambda_context)
        else:
            self.handler(record=record, uow=uow)

    def _clean(self) -> None:
        """The response stays the inbox's (its FIFO, Kafka and stream rules); only an entirely
        failed batch raises, as `BatchProcessor` does."""
        whole = bool(self.records) and len(self.fail_messages) == len(self.records)
        if whole and self.raise_on_entire_batch_failure:
            raise BatchProcessingError(
                msg=f"All records failed processing. {len(self.exceptions)} individual errors "
                "logged separately below.",
                child_exceptions=self.exceptions,
            )

    def _process_record(self, record: dict[str, Any]) -> NoReturn:
        raise TypeError("InboxBatchProcessor commits a batch's records together: use process()")

    async def _async_process_record(self, record: dict[str, Any]) -> NoReturn:
        raise NotImplementedError("InboxBatchProcessor is synchronous")


def _event_type(event_type: EventType | str) -> EventType:
    if isinstance(event_type, EventType):
        return event_type
    found = EventType.__members__.get(event_type)
    if found is not None:
        return found
    if event_type == "Kafka":
        from aws_lambda_powertools.shared.version import VERSION

        raise ConfigurationError(
            f"Kafka batches need aws-lambda-powertools>={KAFKA_POWERTOOLS} (EventType.Kafka); "
            f"{VERSION} is installed"
        )
    raise ConfigurationError(
        f"event_type must be one of {', '.join(EventType.__members__)}, not {event_type!r}"
    )


def _require_uow(handler: Callable[..., Any]) -> None:
    import inspect

    parameters = inspect.signature(handler).parameters
    kinds = {parameter.kind for parameter in parameters.values()}
    if "uow" not in parameters and inspect.Parameter.VAR_KEYWORD not in kinds:
        raise ConfigurationError(
            f"record_handler must take `uow` and describe its writes in it: {handler.__name__}"
            f"{inspect.signature(handler)} does not. InboxBatchProcessor commits them with the "
            "inbox record, one transaction per batch; a handler that calls DynamoDB itself "
            "stays on BatchProcessor"
        )


def _identifier(event_type: EventType, raw: Mapping[str, Any]) -> Hashable:
    """The record's `itemIdentifier` as the inbox's messages carry it."""
    if event_type is EventType.SQS:
        return str(raw["messageId"])
    if event_type is EventType.KinesisDataStreams:
        return str(raw["kinesis"]["sequenceNumber"])
    if event_type is EventType.DynamoDBStreams:
        return str(raw["dynamodb"]["SequenceNumber"])
    return (f"{raw['topic']}-{raw['partition']}", int(raw["offset"]))


def _hashable(identifier: Any) -> Hashable:
    """An `itemIdentifier` (text, or Kafka's topic-partition and offset) as a dictionary key."""
    if isinstance(identifier, Mapping):
        return (str(identifier["topic-partition"]), int(identifier["offset"]))
    return str(identifier)


def _event(event_type: EventType, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The Lambda event Powertools took the records from (Kafka's grouped by topic-partition)."""
    if event_type.name != "Kafka":
        return {"Records": records}
    grouped: dict[str, list[dict[str, Any]]] = {}
    for raw in records:
        grouped.setdefault(f"{raw['topic']}-{raw['partition']}", []).append(raw)
    return {"eventSource": "aws:kafka", "records": grouped}
