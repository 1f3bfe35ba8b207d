"""Decide: parse the payload and run the user's handlers into a unit of work.

`Decider.decide` turns a `Delivery` into a `Decision` (the writes to commit with its inbox record);
`Decider.redecide` asks `on_condition_failed` for the alternative writes of a business outcome.
Both raise `PoisonMessage` for what can never succeed and `HandlerFailed` for a handler that
raised (a bug or an outage: the source retries it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from lambda_inbox._commit.actions import ConditionFailures
from lambda_inbox._commit.unit_of_work import UnitOfWork
from lambda_inbox._errors import (
    ErrorCode,
    HandlerFailed,
    InvalidPayload,
    PoisonMessage,
    UnitOfWorkError,
    short_error,
    truncate,
)
from lambda_inbox._messages import CURRENT_ENVELOPE
from lambda_inbox._sources.identity import Delivery
from lambda_inbox.store._attribute_values import ItemIdentity

M = TypeVar("M")

if TYPE_CHECKING:  # the aliases type the code only
    from lambda_inbox._commit.creates import CreatedDecision, CreatedItems
    from lambda_inbox._messages import InboundMessage

    Parse = Callable[[Any], M]
    DecideFunction = Callable[[M, UnitOfWork], object]
    OnConditionFailed = Callable[[M, ConditionFailures, UnitOfWork], object]

#: What a model raises when it refuses a payload (`invalid_payload`): pydantic's
#: `ValidationError` is a `ValueError`; plain callables (`Order(**raw)`, `int(raw["qty"])`) raise
#: the rest. Anything else the model raises is retried, as a handler's error is.
MODEL_REFUSALS = (
    ValueError,
    TypeError,
    LookupError,
    AttributeError,
    ArithmeticError,
    RecursionError,
)
#: How many times a handler may answer failed conditions with other writes for one message.
MAX_DECISION_ROUNDS = 4
#: Planning estimate of the inbox record's size in a transaction.
INBOX_RECORD_BYTES = 1024


class MessageReader:
    """A model that reads the whole message, not its JSON document: what a batch processor
    gives its record handler is the source's record (`lambda_inbox._powertools.batch`)."""

    __slots__ = ("read",)

    def __init__(self, read: Callable[[InboundMessage], Any]) -> None:
        self.read = read

    def __call__(self, message: InboundMessage) -> Any:
        return self.read(message)


class Decision(Generic[M]):
    """A delivery with the writes its handler decided; `items` names every item they touch.

    `commuting_items` maps the items touched only by a commuting update to that update's merge
    shape: such an item may be shared with other decisions' updates of the same shape.
    """

    __slots__ = (
        "action_count",
        "actions",
        "attempts",
        "commuting_items",
        "delivery",
        "inbox_item",
        "items",
        "lease_owner",
        "payload",
        "result",
        "rounds",
        "size",
    )

    #: A `CreatesItem` put (`CreatedDecision`), not a transaction's writes with an inbox record.
    creates = False

    def __init__(
        self,
        delivery: Delivery,
        payload: M,
        uow: UnitOfWork,
        inbox_item: ItemIdentity,
        rounds: int = 0,
        lease_owner: str | None = None,
    ) -> None:
        self.delivery = delivery
        self.payload = payload
        self.inbox_item = inbox_item
        self.rounds = rounds
        #: Commit attempts that failed transiently.
        self.attempts = 0
        #: Leased mode: the owner token of the lease this decision completes under.
        self.lease_owner = lease_owner
        self._take(uow)

    def __repr__(self) -> str:
        return f"Decision({self.delivery.key!r}, rounds={self.rounds}, attempts={self.attempts})"

    def replace_writes(self, uow: UnitOfWork) -> None:
        """Take the writes of another round of deciding (a business outcome)."""
        self.rounds += 1
        self._take(uow)

    def _take(self, uow: UnitOfWork) -> None:
        """Hold `uow`'s writes and result, and what planning asks of them (computed once, asked
        often); not `uow` itself, which is let go with what it kept to check its writes."""
        self.result = uow.result
        self.actions = actions = uow.actions
        self.action_count = 1 + len(actions)
        self.size = INBOX_RECORD_BYTES + uow.size
        items = [self.inbox_item]
        commuting: dict[ItemIdentity, str] = {}
        for action in actions:
            items.append(action.item_identity)
            if action.merge_shape is not None:
                commuting[action.item_identity] = action.merge_shape
        self.items = frozenset(items)
        self.commuting_items = commuting


class Decider(Generic[M]):
    def __init__(
        self,
        *,
        parse: Parse[M],
        decide: DecideFunction[M],
        on_condition_failed: OnConditionFailed[M] | None,
        key_attributes: tuple[str, ...],
        inbox_item: Callable[[str], ItemIdentity],
        creates: CreatedItems[M] | None = None,
    ) -> None:
        self._parse = parse
        self._reads_message = isinstance(parse, MessageReader)
        self._decide = decide
        self._on_condition_failed = on_condition_failed
        self._key_attributes = key_attributes
        self._inbox_item = inbox_item
        self._creates = creates
        #: The decisions are created items' puts: the inbox holds only fallback records.
        self.creates_items = creates is not None
        #: Each created item's put is sent on its own (not in a transaction).
        self.puts_alone = creates is not None and not creates.transaction

    def decide(self, delivery: Delivery) -> Decision[M]:
        if delivery.poison is not None:
            raise delivery.poison
        payload = self._payload(delivery)
        if self._creates is not None:
            return self._created(delivery, payload, self._creates)
        uow = self._run(self._decide, payload, envelope=delivery.message.envelope)
        return Decision(delivery, payload, uow, self._inbox_item(delivery.key))

    def _created(
        self, delivery: Delivery, payload: M, creates: CreatedItems[M]
    ) -> CreatedDecision[M]:
        uow = self._run(creates.put, payload, delivery, envelope=delivery.message.envelope)
        return creates.decision(delivery, payload, uow, self._inbox_item(delivery.key))

    def canonical_form(self, document: Any) -> Any:
        """`document` as the model reads it, in plain JSON values, when the model is a pydantic
        model (`model_dump(mode="json")`); the document itself otherwise. What a binary value's
        fingerprint hashes (identity.fingerprint). Raises what the model raises."""
        if self._reads_message:
            return document
        parsed = self._parse(document)
        dump = getattr(parsed, "model_dump", None)
        return dump(mode="json") if callable(dump) else document

    def redecide(self, decision: Decision[M], failures: ConditionFailures) -> None:
        """Replace the decision's writes with the business outcome's; poison if there is none."""
        handler = self._on_condition_failed
        if handler is None or decision.rounds + 1 >= MAX_DECISION_ROUNDS:
            reason = "conditions failed: " + ", ".join(sorted(failures.labels))
            if handler is None:
                reason += " (no on_condition_failed handler)"
            raise PoisonMessage(reason, code=ErrorCode.CONDITION_FAILED)
        envelope = decision.delivery.message.envelope
        decision.replace_writes(self._run(handler, decision.payload, failures, envelope=envelope))

    def _payload(self, delivery: Delivery) -> M:
        message = delivery.message
        try:
            return self._parse(message if self._reads_message else message.json)
        except PoisonMessage:  # UndecodableBody, or the model's own verdict
            raise
        except MODEL_REFUSALS as error:
            raise InvalidPayload(invalid_payload_reason(error)) from None
        except Exception as error:  # a bug or an outage in the model: let the source retry
            raise HandlerFailed(short_error(error)) from error

    def _run(
        self, handler: Callable[..., object], *arguments: Any, envelope: object = None
    ) -> UnitOfWork:
        """`handler(*arguments, uow)` on a new unit of work, its failures classified; the
        message's `envelope` readable meanwhile (`current_envelope`)."""
        uow = UnitOfWork(self._key_attributes)
        token = None if envelope is None else CURRENT_ENVELOPE.set(envelope)
        try:
            handler(*arguments, uow)
        except PoisonMessage:
            raise
        except UnitOfWorkError as error:
            raise PoisonMessage(str(error), code=ErrorCode.INVALID_WRITES) from None
        except UnicodeError as error:  # text DynamoDB cannot store, e.g. a JSON "\ud800" escape
            reason = f"the writes hold text that is not valid Unicode ({type(error).__name__})"
            raise PoisonMessage(reason, code=ErrorCode.INVALID_WRITES) from None
        except Exception as error:  # a bug or an outage in the handler: let the source retry
            raise HandlerFailed(short_error(error)) from error
        finally:
            if token is not None:
                CURRENT_ENVELOPE.reset(token)
        return uow


def invalid_payload_reason(error: Exception) -> str:
    """Which fields failed and why, without the values: this text reaches logs, the DLQ
    attributes and the FAILED record, and payloads stay out of logs."""
    errors = getattr(error, "errors", None)
    if callable(errors):  # pydantic.ValidationError
        try:
            details = errors(include_url=False, include_input=False, include_context=False)
        except TypeError:
            details = None
        if details:
            fields = (
                f"{'.'.join(str(part) for part in item['loc']) or '<root>'}: {item['msg']}"
                for item in details[:10]
            )
            more = f" (+{len(details) - 10} more)" if len(details) > 10 else ""
            return truncate("; ".join(fields) + more)
    return short_error(error)
