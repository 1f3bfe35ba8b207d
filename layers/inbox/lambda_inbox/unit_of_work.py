"""The unit of work a handler fills with the domain writes a message causes: `put`, `update`,
`delete`, `condition_check` and `outbox` requests, committed atomically with the inbox record.
What DynamoDB would reject is refused on the spot, naming the action (`action_requests`), and so
are the limits of one message: one action per item, 99 actions, 4 MB. Updates that commute (`ADD`
of numbers only, no condition) may be merged by group commit (docs/concepts.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .action_requests import keyed, new_action, serialized_item
from .config import MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_BYTES
from .errors import UnitOfWorkError
from .write_actions import ItemIdentity, WriteAction, commuting_shape, where

if TYPE_CHECKING:
    from typing import Unpack

    from .action_requests import ActionOptions, CheckOptions
    from .outbox import OutboxRequest

DEFAULT_KEY_ATTRIBUTES = ("pk", "sk")
#: Actions left to the handler: one slot of every transaction holds the inbox record.
MAX_HANDLER_ACTIONS = MAX_TRANSACTION_ACTIONS - 1
#: Bytes left to the handler per message; the inbox record is small but not free.
MAX_HANDLER_BYTES = MAX_TRANSACTION_BYTES - 64 * 1024
#: Result values that need no check: JSON encodes them whatever they hold.
_JSON_SCALARS = frozenset({str, int, bool, type(None)})


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
        #: The small JSON outcome stored on the inbox record (`set_result`).
        self.result: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"UnitOfWork({len(self._actions)} actions, result={self.result!r})"

    @property
    def actions(self) -> tuple[WriteAction, ...]:
        return tuple(self._actions)

    def set_result(self, **result: Any) -> None:
        """Record a small JSON outcome on the inbox record (e.g. `outcome="reserved"`)."""
        try:
            if not all(type(value) in _JSON_SCALARS for value in result.values()):
                json.dumps(result, default=str)
        except (TypeError, ValueError) as error:
            raise UnitOfWorkError(f"result is not JSON-serializable: {error}") from None
        self.result.update(result)

    def put(self, table: str, item: Mapping[str, Any], **options: Unpack[ActionOptions]) -> None:
        """Create or replace an item; `condition` e.g. `attribute_not_exists(pk)`."""
        key, serialized, size = serialized_item(table, item, self.key_attributes)
        request = {"TableName": table, "Item": serialized}
        self._add(new_action("Put", table, key, request, size=size, **options), key)

    def update(
        self,
        table: str,
        key: Mapping[str, Any],
        expression: str,
        *,
        commutes: bool | None = None,
        **options: Unpack[ActionOptions],
    ) -> None:
        """Update (or create) an item with an `UpdateExpression` such as `ADD #n :one`.

        `commutes`: None infers it (`ADD` of numbers only, no condition); True requires it (an
        error if the update does not commute); False keeps this update out of any merge.
        """
        if not expression or not expression.strip():
            raise UnitOfWorkError(f"{where('Update', table)}: the update expression is empty")
        shape = options.get("condition"), options.get("values")
        why_not = None if commutes is False else commuting_shape(expression, *shape)
        if commutes and why_not is not None:
            raise UnitOfWorkError(f"{where('Update', table)}: commutes=True, but {why_not}")
        request: dict[str, Any] = {"TableName": table, "UpdateExpression": expression}
        size = keyed(request, "Update", table, key)
        merges = commutes is not False and why_not is None
        action = new_action("Update", table, key, request, size=size, commutes=merges, **options)
        self._add(action, key)

    def delete(self, table: str, key: Mapping[str, Any], **options: Unpack[ActionOptions]) -> None:
        request: dict[str, Any] = {"TableName": table}
        size = keyed(request, "Delete", table, key)
        self._add(new_action("Delete", table, key, request, size=size, **options), key)

    def condition_check(
        self, table: str, key: Mapping[str, Any], condition: str, **options: Unpack[CheckOptions]
    ) -> None:
        """Require `condition` on an item the message does not write."""
        if not condition or not condition.strip():
            raise UnitOfWorkError(f"condition_check on {table}: the condition is empty")
        request: dict[str, Any] = {"TableName": table}
        request["ConditionExpression"] = condition
        size = keyed(request, "ConditionCheck", table, key)
        action = new_action("ConditionCheck", table, key, request, size=size, **options)
        self._add(action, key)

    def outbox(self, table: str, **request: Unpack[OutboxRequest]) -> str:
        """Ask for `body` to be sent to `destination` (an SQS queue URL, or a name the relay maps
        to one) once this message commits: an outbox item in `table` (a table with a stream and
        TTL on `ttl_attribute`), committed with the inbox record, relayed by `OutboxRelay`; one
        action of the transaction. Returns its `message_id`, what the receiver dedupes on (a new
        UUID unless given: pass one derived from the message to make it the same on every
        decision). The request's fields: `outbox.OutboxRequest`."""
        from .outbox import outbox_item  # loaded on first use

        identifier, item = outbox_item(key_attributes=self.key_attributes, **request)
        key_name = {"#outbox_key": self.key_attributes[0]}
        condition = "attribute_not_exists(#outbox_key)"
        self.put(table, item, condition=condition, names=key_name, label=f"outbox:{identifier}")
        return identifier

    def _add(self, action: WriteAction, key: Mapping[str, Any]) -> None:
        """Keep `action` (on the item of `key`) within the limits of one message."""
        if len(self._actions) >= MAX_HANDLER_ACTIONS:
            raise UnitOfWorkError(
                f"{action.where}: a message may write at most {MAX_HANDLER_ACTIONS} items "
                "(DynamoDB allows 100 actions per transaction, one is the inbox record)"
            )
        if self._bytes + action.size > MAX_HANDLER_BYTES:
            raise UnitOfWorkError(f"{action.where}: the writes of one message exceed 4 MB")
        if action.item_identity in self._items:
            why = "DynamoDB allows one action per item in a transaction"
            raise UnitOfWorkError(
                f"{action.where}: item {dict(key)} is already written by this message; {why}"
            )
        self._items.add(action.item_identity)
        self._actions.append(action)
        self._bytes += action.size
