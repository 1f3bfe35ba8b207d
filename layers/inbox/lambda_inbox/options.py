"""The parameter groups of `InboxConsumer` beside the name, the model and the key: what the
decision is made of, leased mode, the AWS clients and Powertools' telemetry. Loaded when a
consumer names one (a consumer that names none never imports this module)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics, Tracer
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

    from lambda_inbox.commit.decision import DecideFunction, OnConditionFailed
    from lambda_inbox.leases.leased import SideEffect
    from lambda_inbox.leases.policy import LeasePolicy

M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Decide(Generic[M]):
    """The decision: `decide(payload, uow)` fills the unit of work; `on_condition_failed(payload,
    failed, uow)`, when given, supplies the alternative writes of a business outcome (e.g. a
    rejection record) when a domain condition fails. A plain function passed as
    `InboxConsumer(decide=...)` is `Decide(function)`."""

    decide: DecideFunction[M]
    on_condition_failed: OnConditionFailed[M] | None = None


@dataclass(frozen=True, slots=True)
class Leased(Generic[M]):
    """Leased mode, for effects outside DynamoDB: each message is claimed with an `IN_PROGRESS`
    lease, `side_effect(payload, LeaseContext)` runs (its `message_key` is the provider's
    idempotency key), and the writes of `decide` commit only while the lease is still this
    delivery's. `lease`: a `LeasePolicy`, or its duration (a `timedelta` or seconds)."""

    side_effect: SideEffect[M]
    lease: LeasePolicy | timedelta | float | None = None


@dataclass(frozen=True, slots=True)
class Clients:
    """The AWS clients a consumer uses; each one not given is made with the library's bounded
    configuration (short timeouts, few attempts, no call past the Lambda deadline)."""

    dynamodb: DynamoDBClient | None = None
    sqs: SQSClient | None = None


@dataclass(frozen=True, slots=True)
class Observability:
    """Powertools' `Logger`, `Metrics` and `Tracer` of the function; each one not given is the
    consumer's own (a `Logger` and EMF metrics named after the consumer; no tracing)."""

    logger: Logger | None = None
    metrics: Metrics | None = None
    tracer: Tracer | None = None
