"""One action of a unit of work, built and checked as DynamoDB would check it: the key and the
item serialized to its wire format and sized, the condition and the expression names and values
with every placeholder defined and used (`UnitOfWork` adds the limits of one message).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .attribute_values import SIZING_ERRORS, sized, utf8_size, value_error
from .config import MAX_ITEM_BYTES
from .errors import UnitOfWorkError
from .write_actions import ActionKind, WriteAction, where

if TYPE_CHECKING:
    from typing import TypedDict

    class CheckOptions(TypedDict, total=False):
        """The options of a `condition_check` (`UnitOfWork`)."""

        #: Expression attribute names (`{"#n": "name"}`) and values (Python values).
        names: Mapping[str, str] | None
        values: Mapping[str, Any] | None
        #: What `on_condition_failed` sees when the condition fails (the item, unless given).
        label: str | None

    class ActionOptions(CheckOptions, total=False):
        """The options of a `put`, `update` or `delete` (`UnitOfWork`)."""

        #: A `ConditionExpression`, e.g. `attribute_not_exists(pk)`.
        condition: str | None


#: Patterns compiled by `re` on first use (its cache), not at import.
_NAME_PLACEHOLDER = r"#[A-Za-z0-9_]+"
_VALUE_PLACEHOLDER = r":[A-Za-z0-9_]+"


def new_action(
    kind: ActionKind,
    table: str,
    key: Mapping[str, Any],
    request: dict[str, Any],
    *,
    size: int,
    condition: str | None = None,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
    label: str | None = None,
    commutes: bool = False,
) -> WriteAction:
    """The action of `request` (its key or item already in it, `size` their bytes) with its
    condition, names and values added and checked; its label names the item unless given."""
    size += complete_request(kind, table, request, condition, names, values)
    return WriteAction(kind, table, key_of(request, key), request, label, size, commutes, key)


def keyed(request: dict[str, Any], kind: ActionKind, table: str, key: Mapping[str, Any]) -> int:
    """Put the serialized `key` into `request`; its size."""
    request["Key"], size = serialized_key(kind, table, key)
    return size


def key_of(request: Mapping[str, Any], key: Mapping[str, Any]) -> Mapping[str, Any]:
    """The serialized key of the touched item (Puts carry it inside their item)."""
    serialized: Mapping[str, Any] | None = request.get("Key")
    if serialized is not None:
        return serialized
    item = request["Item"]
    return {name: item[name] for name in key}


@lru_cache(maxsize=512)
def _placeholder_problem(
    update: str | None, condition: str | None, names: tuple[str, ...], values: tuple[str, ...]
) -> str | None:
    """What is wrong with the placeholders of the `update` and `condition` expressions, None if
    nothing. Cached: a handler writes the same few expressions with the same placeholders for
    every message."""
    expressions = f"{update or ''} {condition or ''}"
    # Malformed names first: they can never appear in an expression, so they would otherwise
    # be reported as merely unused.
    for placeholders, pattern, form in (
        (names, _NAME_PLACEHOLDER, "#name"),
        (values, _VALUE_PLACEHOLDER, ":value"),
    ):
        for placeholder in placeholders:
            if not re.fullmatch(pattern, placeholder):
                return f"{placeholder!r} is not a '{form}' placeholder"
    for kind, pattern, defined in (
        ("name", _NAME_PLACEHOLDER, names),
        ("value", _VALUE_PLACEHOLDER, values),
    ):
        used = set(re.findall(pattern, expressions))
        if missing := sorted(used.difference(defined)):
            return f"expression {kind} placeholders not defined: {missing}"
        if unused := sorted(set(defined) - used):
            return f"expression {kind}s defined but never used: {unused}"
    return None


def serialized_item(
    table: str, item: Mapping[str, Any], key_attributes: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The key (Python values), the serialized item of a `put` and its size, within DynamoDB's
    400 KB."""
    key = {name: item[name] for name in key_attributes if name in item}
    if not key:
        raise UnitOfWorkError(
            f"{where('Put', table)}: the item has none of the key attributes {key_attributes}"
        )
    serialized, size = _serialized_attributes(item, "Put", table, "")
    if size > MAX_ITEM_BYTES:
        raise UnitOfWorkError(
            f"{where('Put', table)}: item is {size} bytes, DynamoDB allows {MAX_ITEM_BYTES}"
        )
    return key, serialized, size


def serialized_key(
    kind: ActionKind, table: str, key: Mapping[str, Any]
) -> tuple[dict[str, Any], int]:
    """A key of strings, numbers or bytes, serialized, and its size."""
    if not key:
        raise UnitOfWorkError(f"{where(kind, table)}: the key is empty")
    for name, value in key.items():
        if type(value) is not str and (
            not isinstance(value, (str, int, Decimal, bytes)) or isinstance(value, bool)
        ):
            raise UnitOfWorkError(
                f"{where(kind, table)}: key attribute {name!r} must be a string, number or bytes"
            )
    return _serialized_attributes(key, kind, table, "key ")


def _serialized_attributes(
    attributes: Mapping[str, Any], kind: ActionKind, table: str, what: str
) -> tuple[dict[str, Any], int]:
    """Each attribute of an item or a key serialized, and the bytes of their names and values.
    Errors name the action and the attribute (`put on orders, 'total'`; `what` is "key " for a
    key's). One loop per item, not a call per attribute: this runs for every action."""
    serialized = {}
    size = 0
    for name, value in attributes.items():
        if type(name) is not str:
            raise UnitOfWorkError(f"{where(kind, table)}: attribute name {name!r} is not a string")
        if type(value) is str and value.isascii():  # most attributes: `sized` inlined
            serialized[name] = {"S": value}
            value_size = len(value)
        else:
            try:
                serialized[name], value_size = sized(value)
            except SIZING_ERRORS as error:
                raise value_error(f"{where(kind, table)}, {what}{name!r}", value, error) from None
        size += value_size + (len(name) if name.isascii() else utf8_size(name))
    return serialized, size


def complete_request(
    kind: ActionKind,
    table: str,
    request: dict[str, Any],
    condition: str | None,
    names: Mapping[str, str] | None,
    values: Mapping[str, Any] | None,
) -> int:
    """Add the condition and the expression names and values to `request`, every placeholder
    checked; returns the bytes the values add."""
    if not table:
        raise UnitOfWorkError(f"{where(kind, table)}: the table name is empty")
    if condition is not None:
        if not condition.strip():
            raise UnitOfWorkError(f"{where(kind, table)}: the condition is empty")
        request["ConditionExpression"] = condition
    problem = _placeholder_problem(
        request.get("UpdateExpression"),
        request.get("ConditionExpression"),
        tuple(names) if names else (),
        tuple(values) if values else (),
    )
    if problem is not None:
        raise UnitOfWorkError(f"{where(kind, table)}: {problem}")
    if names:
        request["ExpressionAttributeNames"] = dict(names)
    if not values:
        return 0
    serialized = {}
    size = 0
    for placeholder, value in values.items():
        try:
            serialized[placeholder], value_size = sized(value)
        except SIZING_ERRORS as error:
            raise value_error(f"{where(kind, table)}, {placeholder}", value, error) from None
        size += len(placeholder) + value_size
    request["ExpressionAttributeValues"] = serialized
    return size
