"""`InboxConsumer`: the one object a Lambda handler needs.

    consumer = InboxConsumer("order-events", model=OrderPlaced, decide=reserve_stock,
                             on_condition_failed=reject_order, key="event_id")

    def handler(event, context):
        return consumer.handle(event, context)

`handle` recognises SQS, Kafka (MSK or self-managed), Kinesis Data Streams and DynamoDB Streams
events and answers with the partial batch response Lambda expects for that source.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, Literal

from lambda_inbox.aws_clients import bounded, dynamodb_client, sqs_client
from lambda_inbox.commit.decision import Decide, Decider, M, OnConditionFailed
from lambda_inbox.commit.unit_of_work import DEFAULT_KEY_ATTRIBUTES
from lambda_inbox.config import InboxConfig
from lambda_inbox.dead_letter.queue import DeadLetterQueue
from lambda_inbox.deadline import BoundedCalls, Deadline
from lambda_inbox.errors import ConfigurationError
from lambda_inbox.messages import InboundMessage
from lambda_inbox.outcomes import MessageResult
from lambda_inbox.pipeline import Pipeline
from lambda_inbox.sources import (
    DynamoDBStreamsSource,
    EventSource,
    KafkaSource,
    KinesisSource,
    detect,
)
from lambda_inbox.sources.identity import KeyExtractor, KeyStrategy
from lambda_inbox.sources.sqs import SqsSource
from lambda_inbox.store import InboxStore
from lambda_inbox.telemetry import Telemetry

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics, Tracer
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

    from lambda_inbox.leases.leased import LeasePolicy, Leases, SideEffect
    from lambda_inbox.sources.values import ValueFormats


class InboxConsumer(Generic[M]):
    """Effectively-once processing of SQS, Kafka, Kinesis and DynamoDB Streams batches for one
    consumer name.

    `model` parses the JSON body (a pydantic model class or any callable); `decide` fills the
    unit of work; `on_condition_failed`, when given, supplies the alternative writes of a
    business outcome (e.g. a rejection record) when a domain condition fails; `key` is the
    business key: a JMESPath expression on the body, a callable, or a `KeyStrategy`.

    Leased mode (`mode="leased"`, implied by `side_effect`): for effects outside DynamoDB.
    Each message is claimed with an `IN_PROGRESS` lease, `side_effect(payload, LeaseContext)`
    runs (its `message_key` is the provider's idempotency key), and the writes of `decide`
    commit only while the lease is still this delivery's. `lease` is a `LeasePolicy` (or its
    duration). See lease.py. `clock` is the wall clock (epoch seconds) of record times and
    lease expiries; simulations and tests pass their own.

    `value_formats` says how Kafka values and Kinesis data are read (JSON by default; Avro and
    Protobuf through Powertools' deserializers, with or without the Confluent prefix; see
    kafka_values.py).
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
        mode: Literal["transactional", "leased"] | None = None,
        side_effect: SideEffect[M] | None = None,
        lease: LeasePolicy | timedelta | float | None = None,
        clock: Callable[[], float] = time.time,
        value_formats: ValueFormats | None = None,
    ) -> None:
        self.config = config or InboxConfig.from_env(name)
        if self.config.consumer != name:
            raise ConfigurationError(
                f"consumer name {name!r} differs from config.consumer {self.config.consumer!r}"
            )
        self.dynamodb: DynamoDBClient = bounded(dynamodb or dynamodb_client())
        #: Where poison goes (None without `DEAD_LETTER_QUEUE_URL`).
        self.dead_letter_queue: DeadLetterQueue | None = None
        if self.config.dead_letter_queue_url:
            self.dead_letter_queue = DeadLetterQueue(
                bounded(sqs) if sqs else sqs_client, self.config.dead_letter_queue_url
            )
        self.telemetry = Telemetry(name, logger=logger, metrics=metrics, tracer=tracer)
        #: The worker threads of this consumer's bounded network calls, made once.
        self.calls = BoundedCalls(max(2, self.config.max_parallel_commits))
        self.sources: Sequence[EventSource] = (
            KafkaSource(value_formats),
            SqsSource(self.config.fifo_failure_mode, value_formats),
            KinesisSource(value_formats),
            DynamoDBStreamsSource(),
        )
        store = InboxStore.from_config(self.dynamodb, self.config)
        self.pipeline: Pipeline[M] = Pipeline(
            config=self.config,
            dynamodb=self.dynamodb,
            store=store,
            dead_letter_queue=self.dead_letter_queue,
            keys=_key_strategy(key),
            decider=Decider(
                parse=_parser(model),
                decide=decide,
                on_condition_failed=on_condition_failed,
                key_attributes=key_attributes,
                inbox_item=store.item_identity,
            ),
            telemetry=self.telemetry,
            leases=self._leases(mode, side_effect, lease, store, clock),
            now=clock,
        )

    def _leases(
        self,
        mode: str | None,
        side_effect: SideEffect[M] | None,
        lease: LeasePolicy | timedelta | float | None,
        store: InboxStore,
        clock: Callable[[], float],
    ) -> Leases[M] | None:
        mode = mode or ("leased" if side_effect is not None else "transactional")
        if mode not in ("transactional", "leased"):
            raise ConfigurationError(f"mode must be 'transactional' or 'leased', not {mode!r}")
        if mode == "transactional":
            if side_effect is not None or lease is not None:
                raise ConfigurationError("side_effect and lease need mode='leased'")
            return None
        from lambda_inbox.leases.leased import (  # leased consumers only
            Leases,
            LeaseStore,
            lease_policy,
        )

        if side_effect is None:
            raise ConfigurationError("mode='leased' needs a side_effect(payload, context)")
        leases = LeaseStore(
            self.dynamodb,
            table=store.table,
            consumer=store.consumer,
            policy=lease_policy(lease),
            snapshot_bytes=self.config.failed_payload_snapshot_bytes,
        )
        return Leases(leases, side_effect, telemetry=self.telemetry, now=clock)

    def handle(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        """Process an SQS, Kafka, Kinesis or DynamoDB Streams batch; returns
        `{"batchItemFailures": [...]}`.

        Raises `UnsupportedEvent` for an event of any other shape.
        """
        if isinstance(event, Mapping) and event.get("Records") == []:
            return {"batchItemFailures": []}
        source = detect(event, self.sources)
        return source.response(self.process(source.messages(event), context))

    def process(self, messages: list[InboundMessage], context: Any = None) -> list[MessageResult]:
        """Run the processing model on already-parsed messages (for custom sources and tests)."""
        deadline = Deadline.from_context(context, self.config.retry, calls=self.calls)
        return self.pipeline.process(messages, deadline)


def _key_strategy(key: str | KeyExtractor | KeyStrategy | None) -> KeyStrategy:
    if key is None:
        return KeyStrategy()
    if isinstance(key, KeyStrategy):
        return key
    return KeyStrategy.from_body(key)


def _parser(model: type[M] | Callable[[Any], M]) -> Callable[[Any], M]:
    """How a payload is read into `model`: a pydantic model's `model_validate`, any callable
    itself. `model_validate` as pydantic defines it only calls the model's validator with its
    default options, so the validator is called directly (a Python call fewer per message); it
    is looked up on every call, so a model completed or rebuilt later (`model_rebuild`)
    validates with its new rules from then on. An override of `model_validate` is kept."""
    validate = getattr(model, "model_validate", None)
    if not callable(validate):
        return model
    # pydantic is loaded already, or no model is a pydantic model.
    base = getattr(sys.modules.get("pydantic"), "BaseModel", None)
    if base is None or getattr(validate, "__func__", None) is not base.model_validate.__func__:
        return validate  # type: ignore[no-any-return]
    owner: Any = model

    def validate_python(document: Any) -> M:
        return owner.__pydantic_validator__.validate_python(document)  # type: ignore[no-any-return]

    return validate_python
