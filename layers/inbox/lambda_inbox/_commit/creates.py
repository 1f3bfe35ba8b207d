"""`CreatesItem`'s decision: the user's item with the message's identity on it, put on condition
that no item of its key exists (docs/concepts.md, "The item is the record").

The put is an ordinary unit-of-work action, so the item is checked as every write is (its key,
its attribute values, 400 KB); an item that is not a mapping or sets the library's attributes
itself is refused (`invalid_writes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from lambda_inbox._commit.decision import INBOX_RECORD_BYTES, Decision
from lambda_inbox._errors import UnitOfWorkError
from lambda_inbox.store._created_item import (
    RETURN_STORED_ITEM,
    created_attributes,
    created_condition,
    reserved_in,
)

if TYPE_CHECKING:
    from lambda_inbox._commit.unit_of_work import UnitOfWork
    from lambda_inbox._sources.identity import Delivery
    from lambda_inbox.store._attribute_values import ItemIdentity

M = TypeVar("M")
#: How the put is named in `ConditionFailures` (`on_condition_failed`'s `failures`).
ITEM_LABEL = "item"


class CreatedItems(Generic[M]):
    """The puts of one consumer's created items."""

    __slots__ = ("_consumer", "_item", "_key_attributes", "table", "transaction")

    def __init__(
        self,
        table: str,
        item: Callable[[M], Mapping[str, Any]],
        *,
        consumer: str,
        key_attributes: tuple[str, ...],
        transaction: bool,
    ) -> None:
        self.table = table
        self._item = item
        self._consumer = consumer
        self._key_attributes = key_attributes
        #: The batch's puts commit in transactions (all or nothing) instead of one by one.
        self.transaction = transaction

    def put(self, payload: M, delivery: Delivery, uow: UnitOfWork) -> None:
        """Add the put of `payload`'s item, carrying `delivery`'s identity, to `uow`."""
        item = self._item(payload)
        if not isinstance(item, Mapping):
            raise UnitOfWorkError(f"CreatesItem's item returned {type(item).__name__}, not a dict")
        if reserved := reserved_in(item):
            raise UnitOfWorkError(f"the item sets {reserved}, which CreatesItem writes itself")
        first_key = next((name for name in self._key_attributes if name in item), None)
        condition, names = created_condition(first_key or self._key_attributes[0])
        identity = created_attributes(self._consumer, delivery.key, delivery.fingerprint)
        uow.put(
            self.table, {**item, **identity}, condition=condition, names=names, label=ITEM_LABEL
        )
        (action,) = uow.actions
        action.transact["Put"].update(RETURN_STORED_ITEM)

    def decision(
        self, delivery: Delivery, payload: M, uow: UnitOfWork, inbox_item: ItemIdentity
    ) -> CreatedDecision[M]:
        """The decision of `delivery`'s put (`put`), in `uow`."""
        return CreatedDecision(delivery, payload, uow, inbox_item)


class CreatedDecision(Decision[M]):
    """A `CreatesItem` put: its one action is the item, which is its own inbox record. A
    business outcome decided after the item was found not made by this consumer commits with
    an inbox record: the decision becomes a plain `Decision` (the same slots)."""

    __slots__ = ()
    creates = True

    def _take(self, uow: UnitOfWork) -> None:
        super()._take(uow)
        self.action_count -= 1
        self.size -= INBOX_RECORD_BYTES

    def replace_writes(self, uow: UnitOfWork) -> None:
        self.__class__ = Decision  # type: ignore[assignment]
        Decision.replace_writes(self, uow)
