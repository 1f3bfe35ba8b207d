"""`InboxConsumer`: the one object a Lambda handler needs.

    consumer = InboxConsumer("order-events", model=OrderPlaced, decide=reserve_stock,
                             on_condition_failed=reject_order, key="event_id")

    def handler(event, context):
        return consumer.handle(event, context)

`handle` recognises SQS and Kafka (MSK or self-managed) events and answers with the partial
batch response Lambda expects for that source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic

import boto3
from botocore.config import Config

from .config import InboxConfig
from .dead_letter import DeadLetterQueue
from .engine import BatchEngine, Decide, M, OnConditionFailed
from .errors import ConfigurationError, InboxError
from .identity import KeyExtractor, KeyStrategy
from .kafka import is_kafka_event, kafka_response, parse_kafka_event
from .messages import InboundMessage
from .observability import Telemetry
from .outcomes import MessageResult
from .sqs import is_sqs_event, parse_sqs_event, sqs_response
from .store import InboxStore
from .unit_of_work import DEFAULT_KEY_ATTRIBUTES

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics, Tracer
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

#: botocore retries throttling itself (standard mode); the inbox retries cancellations.
#: Parameter validation is off: the unit of work has already checked every request, and botocore
#: re-walking a 100-action transaction costs more CPU than serializing it. DynamoDB still refuses
#: a bad request (ValidationException), which the inbox dead-letters as `write_rejected`.
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=3,
    read_timeout=10,
    tcp_keepalive=True,
    parameter_validation=False,
)


class UnsupportedEvent(InboxError, ValueError):
    """The event is neither an SQS nor a Kafka batch."""


class InboxConsumer(Generic[M]):
    """Effectively-once processing of SQS and Kafka batches for one consumer name.

    `model` parses the JSON body (a pydantic model class or any callable); `decide` fills the
    unit of work; `on_condition_failed`, when given, supplies the alternative writes of a
    business outcome (e.g. a rejection record) when a domain condition fails; `key` is the
    business key: a JMESPath expression on the body, a callable, or a `KeyStrategy`.
    """

    def __init__(
        self,
        name: str,
        *,
        model: type[M] | Callable[[Any], M],
        decide: Decide[M],
        on_condition_failed: OnConditionFailed[M] | None = None,
        key: str | KeyExtractor | KeyStrategy | None = None,
        config: InboxConfig | None = None,
        key_attributes: tuple[str, ...] = DEFAULT_KEY_ATTRIBUTES,
        dynamodb: DynamoDBClient | None = None,
        sqs: SQSClient | None = None,
        logger: Logger | None = None,
        metrics: Metrics | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.config = config or InboxConfig.from_env(name)
        if self.config.consumer != name:
            raise ConfigurationError(
                f"consumer name {name!r} differs from config.consumer {self.config.consumer!r}"
            )
        self.dynamodb: DynamoDBClient = dynamodb or boto3.client("dynamodb", config=CLIENT_CONFIG)
        dead_letters = None
        if self.config.dead_letter_queue_url:
            dead_letters = DeadLetterQueue(sqs or _sqs_client, self.config.dead_letter_queue_url)
        self.telemetry = Telemetry(name, logger=logger, metrics=metrics, tracer=tracer)
        self.engine: BatchEngine[M] = BatchEngine(
            config=self.config,
            dynamodb=self.dynamodb,
            store=InboxStore(self.dynamodb, self.config),
            dead_letters=dead_letters,
            keys=_key_strategy(key),
            parse=_parser(model),
            decide=decide,
            on_condition_failed=on_condition_failed,
            telemetry=self.telemetry,
            key_attributes=key_attributes,
        )

    def handle(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        """Process an SQS or Kafka batch; returns `{"batchItemFailures": [...]}`."""
        if is_kafka_event(event):
            return kafka_response(self.process(parse_kafka_event(event), context))
        if is_sqs_event(event):
            messages = parse_sqs_event(event, fifo_failure_mode=self.config.fifo_failure_mode)
            return sqs_response(self.process(messages, context))
        if isinstance(event, Mapping) and event.get("Records") == []:
            return {"batchItemFailures": []}
        raise UnsupportedEvent(
            "expected an SQS event (Records[].eventSource == 'aws:sqs') or a Kafka event "
            "(eventSource 'aws:kafka' or 'SelfManagedKafka')"
        )

    def process(self, messages: list[InboundMessage], context: Any = None) -> list[MessageResult]:
        """Run the processing model on already-parsed messages (for custom sources and tests)."""
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        return self.engine.process(messages, remaining if callable(remaining) else None)


def _sqs_client() -> SQSClient:
    return boto3.client("sqs", config=CLIENT_CONFIG)


def _key_strategy(key: str | KeyExtractor | KeyStrategy | None) -> KeyStrategy:
    if key is None:
        return KeyStrategy()
    if isinstance(key, KeyStrategy):
        return key
    return KeyStrategy.from_body(key)


def _parser(model: type[M] | Callable[[Any], M]) -> Callable[[Any], M]:
    validate = getattr(model, "model_validate", None)
    if callable(validate):
        return validate  # type: ignore[no-any-return]
    return model
