"""UpdateItem's update expressions and Query's key conditions, the subset plain handlers write:
`SET a = :v, b = :w` and `ADD n :one` (numbers and sets), a hash-key equality."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from .values import Item, _validation

_CLAUSE = re.compile(r"\b(SET|ADD)\b", re.IGNORECASE)
_ASSIGNMENT = re.compile(r"^\s*([#:]?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)\s*$")
_ADDITION = re.compile(r"^\s*([#:]?[A-Za-z0-9_]+)\s+(:[A-Za-z0-9_]+)\s*$")
_KEY_EQUALS = re.compile(r"^\s*([#]?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)\s*$")


def _name(token: str, names: Mapping[str, str]) -> str:
    if token.startswith("#"):
        if token not in names:
            raise _validation(f"undefined attribute name {token}")
        return names[token]
    return token


def _value(token: str, values: Mapping[str, Any]) -> Mapping[str, Any]:
    if token not in values:
        raise _validation(f"undefined attribute value {token}")
    value: Mapping[str, Any] = values[token]
    return value


def updated(current: Item | None, key: Mapping[str, Any], request: Mapping[str, Any]) -> Item:
    """The item after the request's UpdateExpression (a new item from `key` when absent)."""
    item: dict[str, Any] = dict(current) if current is not None else dict(key)
    expression = str(request.get("UpdateExpression", ""))
    names = request.get("ExpressionAttributeNames") or {}
    values = request.get("ExpressionAttributeValues") or {}
    parts = _CLAUSE.split(expression)
    if parts[0].strip():
        raise _validation(f"Invalid UpdateExpression: {expression!r}")
    for verb, body in zip(parts[1::2], parts[2::2], strict=True):
        for piece in body.split(","):
            if verb.upper() == "SET":
                match = _ASSIGNMENT.match(piece)
                if match is None:
                    raise NotImplementedError(f"memory DynamoDB: SET {piece.strip()!r}")
                item[_name(match.group(1), names)] = dict(_value(match.group(2), values))
            else:
                match = _ADDITION.match(piece)
                if match is None:
                    raise NotImplementedError(f"memory DynamoDB: ADD {piece.strip()!r}")
                name = _name(match.group(1), names)
                item[name] = _added(item.get(name), _value(match.group(2), values))
    return item


def _added(current: Mapping[str, Any] | None, value: Mapping[str, Any]) -> dict[str, Any]:
    if "N" in value:
        base = Decimal(current["N"]) if current is not None and "N" in current else Decimal(0)
        return {"N": str(base + Decimal(value["N"]))}
    for kind in ("SS", "NS", "BS"):
        if kind in value:
            existing = list(current.get(kind, [])) if current is not None else []
            return {kind: existing + [v for v in value[kind] if v not in existing]}
    raise _validation("ADD takes a number or a set")


def queried(items: list[Item], hash_key: str, request: Mapping[str, Any]) -> list[Item]:
    """The items whose hash key equals the KeyConditionExpression's value."""
    expression = str(request.get("KeyConditionExpression", ""))
    match = _KEY_EQUALS.match(expression)
    if match is None:
        raise NotImplementedError(f"memory DynamoDB: KeyConditionExpression {expression!r}")
    names = request.get("ExpressionAttributeNames") or {}
    if _name(match.group(1), names) != hash_key:
        raise _validation(f"Query condition missed key schema element: {hash_key}")
    wanted = _value(match.group(2), request.get("ExpressionAttributeValues") or {})
    return [dict(item) for item in items if item.get(hash_key) == wanted]
