"""The unit of work a handler fills with the domain writes a message causes.

Handlers never call DynamoDB themselves: they describe `put` / `update` / `delete` /
`condition_check` actions here (and `outbox` requests for effects elsewhere), and the inbox
commits them atomically with the inbox record.
Everything DynamoDB would reject is checked on the spot, with an error that names the action:
placeholders, value types, one action per item, 100 actions, 400 KB per item, 4 MB per call.

Updates that commute (`ADD` of numbers only, no condition) are marked so, and group commit may
merge them (`write_actions`, docs/concepts.md "Commuting updates").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .config import MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_BYTES
from .errors import UnitOfWorkError
from .write_actions import (
    ActionKind,
    ConditionFailures,
    FailedCondition,
    WriteAction,
    commuting_shape,
    complete_request,
    key_of,
    merge_commuting,
    serialized_item,
    serialized_key,
)

__all__ = [
    "DEFAULT_KEY_ATTRIBUTES",
    "MAX_HANDLER_ACTIONS",
    "MAX_HANDLER_BYTES",
    "ConditionFailures",
    "FailedCondition",
    "UnitOfWork",
    "WriteAction",
    "merge_commuting",
]

DEFAULT_KEY_ATTRIBUTES = ("pk", "sk")
#: Actions left to the handler: one slot of every transaction holds the inbox record.
MAX_HANDLER_ACTIONS = MAX_TRANSACTION_ACTIONS - 1
#: Bytes left to the handler per message; the inbox record is small but not free.
MAX_HANDLER_BYTES = MAX_TRANSACTION_BYTES - 64 * 1024
#: Result values that need no check: JSON encodes them whatever they hold.
_JSON_SCALARS = frozenset({str, int, bool, type(None)})


class UnitOfWork:
    """The writes one message causes, committed atomically with its inbox record.

    `key_attributes` names the key attributes of the tables written, so a `put` knows which item it
    touches; the default suits single-table designs keyed on `pk` (and `sk`).
    """

    __slots__ = ("_actions", "_bytes", "_items", "key_attributes", "result")

    def __init__(self, key_attributes: tuple[str, ...] = DEFAULT_KEY_ATTRIBUTES) -> None:
        self.key_attributes = key_attributes
        self._actions: list[WriteAction] = []
        self._items: set[str] = set()
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
        if not all(type(value) in _JSON_SCALARS for value in result.values()):
            try:
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
        key, serialized, size = serialized_item(f"put on {table}", item, self.key_attributes)
        request: dict[str, Any] = {"TableName": table, "Item": serialized}
        self._add("Put", table, key, request, condition, names, values, label, size)

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
        """Update (or create) an item with an `UpdateExpression` such as `ADD #n :one`.

        `commutes`: None infers it (`ADD` of numbers only, no condition); True requires it (an
        error if the update does not commute); False keeps this update out of any merge.
        """
        where = f"update on {table}"
        if not expression or not expression.strip():
            raise UnitOfWorkError(f"{where}: the update expression is empty")
        why_not = None if commutes is False else commuting_shape(expression, condition, values)
        if commutes and why_not is not None:
            raise UnitOfWorkError(f"{where}: commutes=True, but {why_not}")
        request: dict[str, Any] = {"TableName": table, "UpdateExpression": expression}
        size = keyed(request, where, key)
        merges = commutes is not False and why_not is None
        self._add("Update", table, key, request, condition, names, values, label, size, merges)

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
        request: dict[str, Any] = {"TableName": table}
        size = keyed(request, f"delete on {table}", key)
        self._add("Delete", table, key, request, condition, names, values, label, size)

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
        if not condition or not condition.strip():
            raise UnitOfWorkError(f"condition_check on {table}: the condition is empty")
        request: dict[str, Any] = {"TableName": table}
        size = keyed(request, f"conditioncheck on {table}", key)
        self._add("ConditionCheck", table, key, request, condition, names, values, label, size)

    def outbox(
        self,
        table: str,
        *,
        destination: str,
        body: str | Mapping[str, Any],
        message_id: str | None = None,
        attributes: Mapping[str, str] | None = None,
        group_id: str | None = None,
        ttl_attribute: str = "expires_at",
        ttl_seconds: int | None = None,
    ) -> str:
        """Ask for `body` to be sent to `destination` (an SQS queue URL, or a name the relay
        maps to one) once this message
        commits: an outbox item in `table` (a table with a stream and TTL on `ttl_attribute`),
        committed with the inbox record, relayed by `OutboxRelay`. `message_id` (a new UUID
        unless given: pass one derived from the message to make it the same on every decision)
        is what the receiver dedupes on. Returns it. Counts as one action of the transaction.
        `ttl_seconds`: how long the item is kept (7 days unless given)."""
        from .outbox import DEFAULT_OUTBOX_TTL_SECONDS, outbox_item  # loaded on first use

        identifier, item = outbox_item(
            destination=destination,
            body=body,
            message_id=message_id,
            attributes=attributes,
            group_id=group_id,
            key_attributes=self.key_attributes,
            ttl_attribute=ttl_attribute,
            ttl_seconds=DEFAULT_OUTBOX_TTL_SECONDS if ttl_seconds is None else ttl_seconds,
        )
        self.put(
            table,
            item,
            condition="attribute_not_exists(#outbox_key)",
            names={"#outbox_key": self.key_attributes[0]},
            label=f"outbox:{identifier}",
        )
        return identifier

    def _add(
        self,
        kind: ActionKind,
        table: str,
        key: Mapping[str, Any],
        request: dict[str, Any],
        condition: str | None,
        names: Mapping[str, str] | None,
        values: Mapping[str, Any] | None,
        label: str | None,
        size: int,
        commutes: bool = False,
    ) -> None:
        where = f"{kind.lower()} on {table}"
        size += complete_request(where, request, condition, names, values)
        if len(self._actions) >= MAX_HANDLER_ACTIONS:
            raise UnitOfWorkError(
                f"{where}: a message may write at most {MAX_HANDLER_ACTIONS} items "
                "(DynamoDB allows 100 actions per transaction, one is the inbox record)"
            )
        if self._bytes + size > MAX_HANDLER_BYTES:
            raise UnitOfWorkError(f"{where}: the writes of one message exceed 4 MB")
        action = WriteAction(
            kind=kind,
            table=table,
            key=key_of(request, key),
            request=request,
            label=label or f"{kind.lower()}:{table}:{json.dumps(key, sort_keys=True, default=str)}",
            size=size,
            commutes=commutes,
        )
        if action.item_identity in self._items:
            raise UnitOfWorkError(
                f"{where}: item {dict(key)} is already written by this message; "
                "DynamoDB allows one action per item in a transaction"
            )
        self._items.add(action.item_identity)
        self._actions.append(action)
        self._bytes += size


def keyed(request: dict[str, Any], where: str, key: Mapping[str, Any]) -> int:
    """Put the serialized `key` into `request`; its size."""
    request["Key"], size = serialized_key(where, key)
    return size
