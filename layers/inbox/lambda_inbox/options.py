"""The parameter groups of `InboxConsumer` beside the name, the model and the key: what the
decision is made of, leased mode, the AWS clients and Powertools' telemetry. Loaded when a
consumer names one. Value types in the settings' style (`config._Settings`: slots, equality, a
repr), not dataclasses: a handler imports `Decide` at cold start, and dataclasses there put the
handler's cold start over its target (docs/PERFORMANCE.md, "The library's shape")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from lambda_inbox._internal.settings import _Settings

if TYPE_CHECKING:
    from datetime import timedelta

    from aws_lambda_powertools import Logger, Metrics, Tracer
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

    from lambda_inbox.commit.decision import DecideFunction, OnConditionFailed
    from lambda_inbox.leases.leased import SideEffect
    from lambda_inbox.leases.policy import LeasePolicy

M = TypeVar("M")


class Decide(_Settings, Generic[M]):
    """The decision: `decide(payload, uow)` fills the unit of work; `on_condition_failed(payload,
    failed, uow)`, when given, supplies the alternative writes of a business outcome (e.g. a
    rejection record) when a domain condition fails. A plain function passed as
    `InboxConsumer(decide=...)` is `Decide(function)`."""

    __slots__ = ("decide", "on_condition_failed")

    def __init__(
        self, decide: DecideFunction[M], on_condition_failed: OnConditionFailed[M] | None = None
    ) -> None:
        self.decide = decide
        self.on_condition_failed = on_condition_failed


class Leased(_Settings, Generic[M]):
    """Leased mode, for effects outside DynamoDB: each message is claimed with an `IN_PROGRESS`
    lease, `side_effect(payload, LeaseContext)` runs (its `message_key` is the provider's
    idempotency key), and the writes of `decide` commit only while the lease is still this
    delivery's. `lease`: a `LeasePolicy`, or its duration (a `timedelta` or seconds)."""

    __slots__ = ("lease", "side_effect")

    def __init__(
        self, side_effect: SideEffect[M], lease: LeasePolicy | timedelta | float | None = None
    ) -> None:
        self.side_effect = side_effect
        self.lease = lease


class Clients(_Settings):
    """The AWS clients a consumer uses; each one not given is made with the library's bounded
    configuration (short timeouts, few attempts, no call past the Lambda deadline)."""

    __slots__ = ("dynamodb", "sqs")

    def __init__(
        self, dynamodb: DynamoDBClient | None = None, sqs: SQSClient | None = None
    ) -> None:
        self.dynamodb = dynamodb
        """The DynamoDB client of the inbox and the unit of work's transactions."""
        self.sqs = sqs
        """The SQS client that sends poison to the dead-letter queue."""


class Observability(_Settings):
    """Powertools' `Logger`, `Metrics` and `Tracer` of the function; each one not given is the
    consumer's own (a `Logger` and EMF metrics named after the consumer; no tracing)."""

    __slots__ = ("logger", "metrics", "tracer")

    def __init__(
        self,
        logger: Logger | None = None,
        metrics: Metrics | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.logger = logger
        """The function's `Logger`: the consumer's log lines go through it."""
        self.metrics = metrics
        """The function's `Metrics`: the consumer's metrics join its flush."""
        self.tracer = tracer
        """The function's `Tracer`: the consumer's subsegments go into its trace."""
