"""`InboxConsumer`: the one object a Lambda handler needs.

    consumer = InboxConsumer("order-events", model=OrderPlaced,
                             decide=Decide(reserve_stock, on_condition_failed=reject_order),
                             key="event_id")

    def handler(event, context):
        return consumer.handle(event, context)

`handle` recognises SQS, Kafka (MSK or self-managed), Kinesis Data Streams and DynamoDB Streams
events and answers with the partial batch response Lambda expects for that source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic

from lambda_inbox._commit.decision import Decider, M
from lambda_inbox._config import InboxConfig
from lambda_inbox._dead_letter.queue import DeadLetterQueue
from lambda_inbox._errors import ConfigurationError
from lambda_inbox._internal.aws_clients import bounded, bounded_dynamodb_client, sqs_client
from lambda_inbox._internal.deadline import DECODING, BoundedCalls, Deadline
from lambda_inbox._messages import InboundMessage
from lambda_inbox._outcomes import MessageResult
from lambda_inbox._pipeline import Pipeline
from lambda_inbox._sources import (
    ENVELOPES,
    DynamoDBStreamsSource,
    KafkaSource,
    KinesisSource,
    detect,
)
from lambda_inbox._sources.identity import KeyExtractor, KeyStrategy
from lambda_inbox._sources.senders import principals
from lambda_inbox._sources.sqs import SqsSource
from lambda_inbox._telemetry import Telemetry
from lambda_inbox.store import InboxStore

#: Puts of a `CreatesItem` batch sent at once: botocore's default `max_pool_connections`, and
#: a 10-message SQS batch in one round.
PUT_CONCURRENCY = 10

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parser.envelopes.base import BaseEnvelope
    from mypy_boto3_dynamodb import DynamoDBClient

    from lambda_inbox._commit.creates import CreatedItems
    from lambda_inbox._commit.decision import DecideFunction, OnConditionFailed
    from lambda_inbox._leases.leased import Leases
    from lambda_inbox._options import Clients, CreatesItem, Decide, Leased, Observability
    from lambda_inbox._sources import EnvelopeName, EventSource


class InboxConsumer(Generic[M]):
    """Effectively-once processing of SQS, Kafka, Kinesis and DynamoDB Streams batches for one
    consumer name.

    `model` parses the payload (a pydantic model class, or any callable); `decide` fills the
    unit of work: a function `decide(payload, uow)`, or `Decide(decide, on_condition_failed=...)`
    for the alternative writes of a business outcome when a domain condition fails; `key` is the
    business key: a JMESPath expression on the body, a callable, or a `KeyStrategy`; `envelope`
    names what wraps every SQS body (`"sns"`, `"eventbridge"`, `"s3"`; None: the body is the
    payload), read as docs/concepts.md, "What producers put in a queue", says.

    The groups: `leased=Leased(side_effect, lease=...)` for effects outside DynamoDB (leased
    mode; transactional without it); `clients=Clients(dynamodb=..., sqs=...)`;
    `observability=Observability(logger=..., metrics=..., tracer=...)`; `config`, the settings
    (`InboxConfig`; read from the environment with `InboxConfig.from_env(name)` when not given),
    kept as `config`.
    """

    def __init__(
        self,
        name: str,
        *,
        model: type[M] | Callable[[Any], M],
        decide: DecideFunction[M] | Decide[M] | CreatesItem[M],
        key: str | KeyExtractor | KeyStrategy | None = None,
        envelope: EnvelopeName | BaseEnvelope | type[BaseEnvelope] | None = None,
        leased: Leased[M] | None = None,
        clients: Clients | None = None,
        observability: Observability | None = None,
        config: InboxConfig | None = None,
    ) -> None:
        self.config = config = config or InboxConfig.from_env(name)
        if config.consumer != name:
            raise ConfigurationError(
                f"consumer name {name!r} differs from config.consumer {config.consumer!r}"
            )
        dynamodb, sqs = (clients.dynamodb, clients.sqs) if clients else (None, None)
        self.dynamodb: DynamoDBClient = bounded(dynamodb) if dynamodb else bounded_dynamodb_client()
        """The DynamoDB client of the inbox and the transactions: made on its first call, so a
        handler imported before a test starts moto (`mock_aws()`) still talks to moto."""
        self.dead_letter_queue: DeadLetterQueue | None = None
        """Where poison goes (None without `DEAD_LETTER_QUEUE_URL`)."""
        if config.dead_letter_queue_url:
            self.dead_letter_queue = DeadLetterQueue(
                bounded(sqs) if sqs else sqs_client, config.dead_letter_queue_url
            )
        logger, metrics, tracer = (
            (observability.logger, observability.metrics, observability.tracer)
            if observability
            else (None, None, None)
        )
        self.telemetry = Telemetry(name, logger=logger, metrics=metrics, tracer=tracer)
        """The consumer's logs, metrics and traces (through `observability`'s, when given)."""
        self._limits = (config.sources.decoding_limits, None, None)
        decide_function, on_condition_failed, creates = _decision(decide, config)
        if creates is not None and leased is not None:
            raise ConfigurationError(
                "CreatesItem has no leased mode: a lease needs an inbox record"
            )
        parallel = PUT_CONCURRENCY if creates is not None and not creates.transaction else 2
        self.calls = BoundedCalls(max(parallel, config.commit.max_parallel_commits))
        """The worker threads of this consumer's bounded network calls, made once."""
        formats = config.sources.value_formats
        per_image = False
        if envelope is not None and envelope not in ENVELOPES:
            from lambda_inbox._sources.envelopes import envelope_setting  # Powertools' envelopes

            envelope, per_image = envelope_setting(envelope)
        self.sources: Sequence[EventSource] = (
            KafkaSource(formats),
            SqsSource(
                config.sources.fifo_failure_mode,
                formats,
                envelope,
                principals(config.sources.trusted_redrivers),
            ),
            KinesisSource(formats),
            DynamoDBStreamsSource(),
        )
        """The event sources `handle` recognises, in the order it tries them."""
        from lambda_inbox._options import parser  # the checks run once, when built

        store = InboxStore.from_config(self.dynamodb, config)
        if config.commit.migrating_from is not None:  # a cut-over from Powertools' @idempotent
            if creates is not None:
                raise ConfigurationError(
                    "CreatesItem has no migrating_from: Powertools' record is checked in the "
                    "transaction of an inbox record"
                )
            guard = config.commit.migrating_from.guard
            decide_function, on_condition_failed = guard(decide_function, on_condition_failed)
        self.pipeline: Pipeline[M] = Pipeline(
            config=config,
            dynamodb=self.dynamodb,
            store=store,
            dead_letter_queue=self.dead_letter_queue,
            keys=_key_strategy(key),
            decider=Decider(
                parse=parser(model, per_image=per_image),
                decide=decide_function,
                on_condition_failed=on_condition_failed,
                key_attributes=config.key_attributes,
                inbox_item=store.item_identity,
                creates=creates,
            ),
            telemetry=self.telemetry,
            leases=self._leases(leased, store, config),
            now=config.clock,
        )
        """The processing model the batches go through (identify, decide, commit, report)."""

    def _leases(
        self, leased: Leased[M] | None, store: InboxStore, config: InboxConfig
    ) -> Leases[M] | None:
        if leased is None:
            return None
        from lambda_inbox._leases.leased import Leases, LeaseWrites, lease_policy  # leased only

        if not callable(getattr(leased, "side_effect", None)):
            raise ConfigurationError("leased=Leased(side_effect, ...) needs a callable side_effect")
        from lambda_inbox._options import require_arity

        require_arity(leased.side_effect, 2, "side_effect", "(payload, lease)")
        policy = lease_policy(leased.lease)
        leases = LeaseWrites(
            self.dynamodb,
            table=store.table,
            consumer=store.consumer,
            lease_seconds=policy.duration.total_seconds(),
            max_attempts=policy.max_attempts,
            release_on_failure=policy.release_on_failure,
            snapshot_bytes=config.retention.snapshot_bytes,
        )
        return Leases(leases, leased.side_effect, telemetry=self.telemetry, now=config.clock)

    def handle(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        """Process an SQS, Kafka, Kinesis or DynamoDB Streams batch; returns
        `{"batchItemFailures": [...]}`.

        Raises `UnsupportedEvent` for an event of any other shape.
        """
        if isinstance(event, Mapping) and event.get("Records") == []:
            return {"batchItemFailures": []}
        source = detect(event, self.sources)
        if isinstance(source, KinesisSource):
            return source.response(self._process_kinesis(source, event, context))
        token = DECODING.set(self._limits)  # the adapters': no deadline yet
        try:
            messages = source.messages(event)
        finally:
            DECODING.reset(token)
        return source.response(self.process(messages, context))

    def process(self, messages: list[InboundMessage], context: Any = None) -> list[MessageResult]:
        """Run the processing model on already-parsed messages (for custom sources and tests)."""
        deadline = Deadline.from_context(context, self.config.retry, calls=self.calls)
        token = DECODING.set((self.config.sources.decoding_limits, deadline, deadline.left()))
        try:
            return self.pipeline.process(messages, deadline)
        finally:
            DECODING.reset(token)

    def _process_kinesis(
        self, source: KinesisSource, event: Mapping[str, Any], context: Any
    ) -> list[MessageResult]:
        """A Kinesis batch, a chunk at a time; what to redeliver."""
        from lambda_inbox._sources.kinesis import CHUNK_MESSAGES, process_in_chunks
        from lambda_inbox.store._progress import AggregateProgressStore

        deadline = Deadline.from_context(context, self.config.retry, calls=self.calls)
        logger = self.telemetry.logger
        progress = AggregateProgressStore(
            self.dynamodb, self.config, deadline, logger, resumes_above=CHUNK_MESSAGES
        )
        token = DECODING.set((self.config.sources.decoding_limits, deadline, deadline.left()))
        try:
            batch = source.batch(event, progress)
            process = self.pipeline.process
            return process_in_chunks(process, batch, deadline, CHUNK_MESSAGES, batch.keep_progress)
        finally:
            DECODING.reset(token)


def _key_strategy(key: str | KeyExtractor | KeyStrategy | None) -> KeyStrategy:
    if key is None:
        return KeyStrategy()
    if isinstance(key, KeyStrategy):
        return key
    if callable(key):
        from lambda_inbox._options import require_arity

        require_arity(key, 1, "key", "(payload)")
    return KeyStrategy.from_body(key)


def _decision(
    decide: DecideFunction[M] | Decide[M] | CreatesItem[M], config: InboxConfig
) -> tuple[DecideFunction[M], OnConditionFailed[M] | None, CreatedItems[M] | None]:
    """The decide function, the business outcome's and the created items' puts, from a
    function, a `Decide` or a `CreatesItem`."""
    from lambda_inbox._options import require_arity

    if callable(decide):
        require_arity(decide, 2, "decide", "(payload, uow)")
        return decide, None, None
    if callable(getattr(decide, "decide", None)):  # a `Decide`
        require_arity(decide.decide, 2, "decide", "(payload, uow)")  # type: ignore[union-attr]
        if decide.on_condition_failed is not None:
            shape = "(payload, failed, uow)"
            require_arity(decide.on_condition_failed, 3, "on_condition_failed", shape)
        return decide.decide, decide.on_condition_failed, None  # type: ignore[union-attr]
    from lambda_inbox._options import CreatesItem  # loaded when a consumer names a group

    if isinstance(decide, CreatesItem):
        from lambda_inbox._commit.creates import CreatedItems  # CreatesItem consumers only

        require_arity(decide.item, 1, "CreatesItem's item", "(payload)")
        if decide.on_condition_failed is not None:
            shape = "(payload, failed, uow)"
            require_arity(decide.on_condition_failed, 3, "on_condition_failed", shape)
        creates = CreatedItems(
            decide.table,
            decide.item,
            consumer=config.consumer,
            key_attributes=config.key_attributes,
            transaction=decide.transaction,
        )
        return _no_decide, decide.on_condition_failed, creates
    raise ConfigurationError(
        f"decide must be a function, a Decide or a CreatesItem, not {decide!r}"
    )


def _no_decide(payload: object, uow: object) -> None:
    """A `CreatesItem` consumer decides through its item's put (`CreatedItems.put`)."""
    raise AssertionError("a CreatesItem consumer's decisions are its puts")
