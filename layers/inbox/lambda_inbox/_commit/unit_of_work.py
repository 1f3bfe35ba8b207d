"""The unit of work a handler fills with a message's domain writes (`put`, `update`, `delete`,
`condition_check`, `outbox`), committed atomically with the inbox record. What DynamoDB would
reject, and what exceeds one message's limits (one action per item, 99 actions, 4 MB), is refused
on the spot, naming the action; commuting updates may merge in group commit (docs/concepts.md)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Unpack

from lambda_inbox._commit.actions import WriteAction
from lambda_inbox._commit.requests import keyed_action, put_action, update_action
from lambda_inbox._config import (
    DEFAULT_KEY_ATTRIBUTES,
    MAX_TRANSACTION_ACTIONS,
    MAX_TRANSACTION_BYTES,
)
from lambda_inbox._errors import UnitOfWorkError
from lambda_inbox.store._attribute_values import ItemIdentity

if TYPE_CHECKING:
    from lambda_inbox.store._outbox_item import OutboxRequest

MAX_HANDLER_ACTIONS = MAX_TRANSACTION_ACTIONS - 1  #: one action of each is the inbox record
MAX_HANDLER_BYTES = MAX_TRANSACTION_BYTES - 64 * 1024  #: and its bytes, small but not free
_JSON_SCALARS = frozenset({str, int, bool, type(None)})  #: result values JSON always encodes


class UnitOfWork:
    """The writes of one message. `key_attributes`: the key attributes of the tables written, so
    a `put` knows its item (default `pk`, `sk`). Every action takes `condition`, `names` and
    `values` (expression names, Python values) and a `label` for `on_condition_failed`."""

    __slots__ = ("_actions", "_bytes", "_items", "key_attributes", "result")

    def __init__(self, key_attributes: tuple[str, ...] = DEFAULT_KEY_ATTRIBUTES) -> None:
        self.key_attributes = key_attributes
        self._actions: list[WriteAction] = []
        self._items: set[ItemIdentity] = set()
        self._bytes = 0
        self.result: dict[str, Any] = {}
        """What `set_result` recorded: stored on the inbox record as its `result`."""

    def __repr__(self) -> str:
        return f"UnitOfWork({len(self._actions)} actions, result={self.result!r})"

    @property
    def actions(self) -> tuple[WriteAction, ...]:
        """The write actions so far, in the order they were added."""
        return tuple(self._actions)

    @property
    def size(self) -> int:
        """The bytes of every action's key or item and values (DynamoDB's count)."""
        return self._bytes

    def set_result(self, **result: Any) -> None:
        """Record a small JSON outcome on the inbox record (`result`, e.g. `outcome="reserved"`)."""
        try:
            if not _JSON_SCALARS.issuperset(map(type, result.values())):
                json.dumps(result, default=str)
        except (TypeError, ValueError) as error:
            raise UnitOfWorkError(f"result is not JSON-serializable: {error}") from None
        self.result.update(result)

    def put(
        self,
        table: str,
        item: Mapping[str, Any],
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        label: str | None = None,
    ) -> None:
        """Create or replace an item; `condition` e.g. `attribute_not_exists(pk)`."""
        self._add(put_action(table, item, self.key_attributes, (condition, names, values, label)))

    def update(
        self,
        table: str,
        key: Mapping[str, Any],
        expression: str,
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        label: str | None = None,
        commutes: bool | None = None,
    ) -> None:
        """Update (or create) an item with an `UpdateExpression` such as `ADD #n :one`. `commutes`:
        None infers it (`ADD` of numbers only, no condition), True requires it, False: no merge."""
        options = (condition, names, values, label)
        self._add(update_action(table, key, expression, commutes, options))

    def delete(
        self,
        table: str,
        key: Mapping[str, Any],
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        label: str | None = None,
    ) -> None:
        """Delete the item at `key` of `table` (a `Delete` action of the transaction), when
        `condition` holds if given; `label` names it in `ConditionFailures`."""
        self._add(keyed_action("Delete", table, key, None, (condition, names, values, label)))

    def condition_check(
        self,
        table: str,
        key: Mapping[str, Any],
        condition: str,
        *,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        label: str | None = None,
    ) -> None:
        """Require `condition` on an item the message does not write."""
        options = (condition or "", names, values, label)
        self._add(keyed_action("ConditionCheck", table, key, None, options))

    def outbox(self, table: str, **request: Unpack[OutboxRequest]) -> str:
        """Ask for `body` to be sent to `destination` once this message commits: an outbox item in
        `table` (an action of the transaction) relayed by `OutboxRelay`. Returns its `message_id`,
        the receiver's dedupe key, a new UUID unless given. Fields: `destination`, `body`,
        `message_id`, `attributes`, `group_id`, `event_source`, `detail_type`, `ttl_attribute`,
        `ttl_seconds` (docs/concepts.md, "The outbox")."""
        identifier, item, condition, names = _outbox_put()(self.key_attributes, **request)
        self.put(table, item, condition=condition, names=names, label=f"outbox:{identifier}")
        return identifier

    def _add(self, action: WriteAction) -> None:
        """Keep `action` within the limits of one message."""
        if len(self._actions) >= MAX_HANDLER_ACTIONS:
            raise UnitOfWorkError(
                f"{action.where}: a message may write at most {MAX_HANDLER_ACTIONS} items "
                "(DynamoDB allows 100 actions per transaction, one is the inbox record)"
            )
        if self._bytes + action.size > MAX_HANDLER_BYTES:
            raise UnitOfWorkError(f"{action.where}: the writes of one message exceed 4 MB")
        if action.item_identity in self._items:
            raise UnitOfWorkError(
                f"{action.where}: item {dict(action.plain_key)} is already written by this "
                "message; DynamoDB allows one action per item in a transaction"
            )
        self._items.add(action.item_identity)
        self._actions.append(action)
        self._bytes += action.size


@cache
def _outbox_put() -> Callable[..., tuple[str, dict[str, Any], str, dict[str, str]]]:
    """`store._outbox_item.outbox_put`, loaded on the first outbox (outbox users only) and kept:
    an import statement in `UnitOfWork.outbox` would run the import machinery for every message."""
    from lambda_inbox.store._outbox_item import outbox_put

    return outbox_put
