"""The parameter groups of `InboxConsumer` beside the name, the model and the key: what the
decision is made of, leased mode, the AWS clients and Powertools' telemetry; and the checks of
the callables a consumer is given, when it is built (`parser`, `require_arity`): a model that is
not a type or a callable, or a handler that cannot take the arguments it will be called with, is
a `ConfigurationError` naming what was given, not a dead letter or a retry on every message.
Loaded when a consumer names one. Value types in the settings' style (`config._Settings`: slots, equality, a
repr), not dataclasses: a handler imports `Decide` at cold start, and dataclasses there put the
handler's cold start over its target (docs/PERFORMANCE.md, "The library's shape")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from lambda_inbox._errors import ConfigurationError
from lambda_inbox._internal import _Settings

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import timedelta
    from typing import Any

    from aws_lambda_powertools import Logger, Metrics, Tracer
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

    from lambda_inbox._commit.decision import DecideFunction, OnConditionFailed
    from lambda_inbox._leases.leased import SideEffect
    from lambda_inbox._leases.policy import LeasePolicy

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


class CreatesItem(_Settings, Generic[M]):
    """A decision whose whole effect is one new item: `item(payload)` returns it (plain Python
    values, as `UnitOfWork.put` takes them) and one conditional put into `table` is both the
    effect and the dedupe (docs/concepts.md, "The item is the record"). The item carries the
    message's consumer, key and fingerprint; no inbox record is written unless the message is
    poison or the item exists but was not made by this consumer, when `on_condition_failed`
    (payload, failures, uow), if given, decides the alternative writes as with `Decide`.

    The puts of a batch go concurrently, 1 WCU each for an item of up to 1 KB; with
    `transaction=True` they commit in one `TransactWriteItems` (2 WCU each), all or nothing.
    """

    __slots__ = ("item", "on_condition_failed", "table", "transaction")

    def __init__(
        self,
        table: str,
        item: Callable[[M], Mapping[str, Any]],
        *,
        on_condition_failed: OnConditionFailed[M] | None = None,
        transaction: bool = False,
    ) -> None:
        if not isinstance(table, str) or not table:
            raise ConfigurationError(f"CreatesItem needs a table name, not {table!r}")
        if not callable(item):
            raise ConfigurationError(f"CreatesItem needs a callable item, not {item!r}")
        if on_condition_failed is not None and not callable(on_condition_failed):
            raise ConfigurationError("CreatesItem's on_condition_failed must be callable")
        self.table = table
        self.item = item
        self.on_condition_failed = on_condition_failed
        self.transaction = bool(transaction)


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


# ---- the callables, checked when the consumer is built --------------------------------------


def parser(model: type[M] | Callable[[Any], M], *, per_image: bool = False) -> Callable[[Any], M]:
    """How a payload is read into `model`: a pydantic model's `model_validate` (looked up on
    the model, so a model rebuilt later validates with its new rules), any callable itself.
    `per_image` (Powertools' `DynamoDBStreamEnvelope`): the model reads each image of a stream
    document, as that envelope does, and the payload is `{"NewImage": ..., "OldImage": ...}`."""
    validate = getattr(model, "model_validate", None)
    if callable(validate):
        read: Callable[[Any], M] = validate
    elif callable(model):
        read = model
        require_arity(model, 1, "model", "(document)")
    else:
        raise ConfigurationError(
            "model must be a pydantic model class or a callable taking the JSON document, "
            f"not {model!r} ({type(model).__name__})"
        )
    if not per_image:
        return read

    def each_image(document: Mapping[str, Any]) -> Any:
        return {
            side: None if document.get(side) is None else read(document[side])
            for side in ("NewImage", "OldImage")
        }

    return each_image


def require_arity(function: object, count: int, what: str, shape: str) -> None:
    """Raise `ConfigurationError` when `function` cannot be called with `count` positional
    arguments; callables whose signature Python cannot read (some builtins) pass."""
    import inspect

    try:
        signature = inspect.signature(function)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*[None] * count)
    except TypeError:
        name = getattr(function, "__qualname__", None) or repr(function)
        raise ConfigurationError(
            f"{what} must take {shape}; {name}{signature} cannot take {count} "
            f"positional argument{'s' if count > 1 else ''}"
        ) from None
