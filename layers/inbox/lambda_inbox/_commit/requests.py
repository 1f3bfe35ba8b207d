"""One action of a unit of work, built and checked as DynamoDB would check it: the key and the
item serialized to its wire format and sized, the condition and the expression names and values
with every placeholder defined and used (`UnitOfWork` adds the limits of one message).

Whatever depends only on the table and the expressions is checked once and cached: a handler
writes the same few expressions for every message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any

from lambda_inbox._commit.actions import ActionKind, WriteAction, commuting_shape, where
from lambda_inbox._config import MAX_ITEM_BYTES
from lambda_inbox._errors import UnitOfWorkError
from lambda_inbox.store._attribute_values import (
    SIZING_ERRORS,
    sized,
    text_size,
    value_error,
)

#: Patterns compiled by `re` on first use (its cache), not at import.
_NAME_PLACEHOLDER = r"#[A-Za-z0-9_]+"
_VALUE_PLACEHOLDER = r":[A-Za-z0-9_]+"
_KEY_TYPES = (str, int, Decimal, bytes)
#: The options of an action, as `UnitOfWork` takes them: condition, names, values, label.
Options = tuple[str | None, Mapping[str, str] | None, Mapping[str, Any] | None, str | None]


def put_action(
    table: str, item: Mapping[str, Any], key_attributes: tuple[str, ...], options: Options
) -> WriteAction:
    """A `Put` of `item`, the item named by the `key_attributes` it holds; within 400 KB."""
    key = {}
    for name in key_attributes:
        if name in item:
            value = key[name] = item[name]
            if type(value) is not str:
                _check_key_value("Put", table, name, value)
    if not key:
        raise UnitOfWorkError(
            f"{where('Put', table)}: the item has none of the key attributes {key_attributes}"
        )
    serialized, size = _serialized_attributes(item, "Put", table, key=False)
    request = {"TableName": table, "Item": serialized}
    return _action("Put", table, key, request, size, None, options)


def update_action(
    table: str, key: Mapping[str, Any], expression: str, commutes: bool | None, options: Options
) -> WriteAction:
    """An `Update` of the item `key` with `expression`; `commutes` as `UnitOfWork.update`."""
    if not expression or expression.isspace():
        raise UnitOfWorkError(f"{where('Update', table)}: the update expression is empty")
    condition, _, values, _ = options
    if commutes is None and condition is not None:  # never commutes (`commuting_shape`)
        return keyed_action("Update", table, key, expression, options)
    why_not = None if commutes is False else commuting_shape(expression, condition, values)
    if commutes and why_not is not None:
        raise UnitOfWorkError(f"{where('Update', table)}: commutes=True, but {why_not}")
    merges = commutes is not False and why_not is None
    return keyed_action("Update", table, key, expression, options, merges)


def keyed_action(
    kind: ActionKind,
    table: str,
    key: Mapping[str, Any],
    update: str | None,
    options: Options,
    commutes: bool = False,
) -> WriteAction:
    """An `Update` (its expression `update`), `Delete` or `ConditionCheck` of the item `key`, a
    key of strings, numbers or bytes."""
    if not key:
        raise UnitOfWorkError(f"{where(kind, table)}: the key is empty")
    serialized, size = _serialized_attributes(key, kind, table, key=True)
    request: dict[str, Any] = {"TableName": table, "Key": serialized}
    if update is not None:
        request["UpdateExpression"] = update
    return _action(kind, table, key, request, size, update, options, commutes)


def _action(
    kind: ActionKind,
    table: str,
    key: Mapping[str, Any],
    request: dict[str, Any],
    size: int,
    update: str | None,
    options: Options,
    commutes: bool = False,
) -> WriteAction:
    """The action of `request` (its key or item in it, `size` their bytes) with its condition and
    its expression names and values added, every placeholder checked."""
    condition, names, values, label = options
    problem = _expression_problem(
        table, update, condition, tuple(names) if names else (), tuple(values) if values else ()
    )
    if problem is not None:
        raise UnitOfWorkError(f"{where(kind, table)}: {problem}")
    if condition is not None:
        request["ConditionExpression"] = condition
    if names:
        request["ExpressionAttributeNames"] = dict(names)
    if values:
        serialized = {}
        for placeholder, value in values.items():
            try:
                serialized[placeholder], value_size = sized(value)
            except SIZING_ERRORS as error:
                raise value_error(f"{where(kind, table)}, {placeholder}", value, error) from None
            size += len(placeholder) + value_size
        request["ExpressionAttributeValues"] = serialized
    return WriteAction(kind, table, key, request, label, size, commutes)


def _serialized_attributes(
    attributes: Mapping[str, Any], kind: ActionKind, table: str, *, key: bool
) -> tuple[dict[str, Any], int]:
    """Each attribute of an item (or of a key: `key`) serialized, and the bytes of their names
    and values; an item over DynamoDB's 400 KB is refused. Errors name the action and the
    attribute (`put on orders, 'total'`)."""
    serialized = {}
    size = 0
    for name, value in attributes.items():
        if type(name) is not str:
            raise UnitOfWorkError(f"{where(kind, table)}: attribute name {name!r} is not a string")
        if key and type(value) is not str:  # text, the usual key, is always a valid one
            _check_key_value(kind, table, name, value)
        try:
            serialized[name], value_size = sized(value)
            size += value_size + text_size(name)
        except SIZING_ERRORS as error:
            what = f"key {name!r}" if key else repr(name)
            raise value_error(f"{where(kind, table)}, {what}", value, error) from None
    if not key and size > MAX_ITEM_BYTES:
        raise _too_big(size, kind, table)
    return serialized, size


def _too_big(size: int, kind: ActionKind, table: str) -> UnitOfWorkError:
    return UnitOfWorkError(
        f"{where(kind, table)}: item is {size} bytes, DynamoDB allows {MAX_ITEM_BYTES}"
    )


def _check_key_value(kind: ActionKind, table: str, name: str, value: Any) -> None:
    if not isinstance(value, _KEY_TYPES) or isinstance(value, bool):
        raise UnitOfWorkError(
            f"{where(kind, table)}: key attribute {name!r} must be a string, number or bytes"
        )


@lru_cache(maxsize=512)
def _expression_problem(
    table: str,
    update: str | None,
    condition: str | None,
    names: tuple[str, ...],
    values: tuple[str, ...],
) -> str | None:
    """What is wrong with the table name or the expressions of an action, None if nothing.
    Cached: a handler writes the same few expressions with the same placeholders for every
    message."""
    if not table:
        return "the table name is empty"
    if condition is not None and not condition.strip():
        return "the condition is empty"
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
