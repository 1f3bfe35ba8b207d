"""DynamoDB condition expressions, parsed and evaluated against an item (the subset the library
writes: comparisons, AND/OR/NOT, attribute_exists / attribute_not_exists)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .values import Item, _comparable, _validation

if TYPE_CHECKING:
    pass

#: DynamoDB: the largest item, in bytes (attribute names and values).

# ---- condition expressions ----------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(<>|<=|>=|=|<|>|\(|\)|,|[#:]?[A-Za-z0-9_.\-]+)")
_COMPARISONS = ("=", "<>", "<", "<=", ">", ">=")


@dataclass
class _Condition:
    """A parsed ConditionExpression, evaluated against an item (None: no item)."""

    tokens: list[str]
    names: Mapping[str, str]
    values: Mapping[str, Any]
    position: int = 0

    @classmethod
    def parse(
        cls, expression: str, names: Mapping[str, str], values: Mapping[str, Any]
    ) -> Callable[[Item | None], bool]:
        tokens: list[str] = []
        rest = expression.strip()
        while rest:
            match = _TOKEN.match(rest)
            if match is None:
                raise _validation(f"Invalid ConditionExpression: {expression!r}")
            tokens.append(match.group(1))
            rest = rest[match.end() :].strip()
        parser = cls(tokens, names, values)
        evaluate = parser._or()
        if parser.position != len(tokens):
            raise _validation(f"Invalid ConditionExpression: {expression!r}")
        return evaluate

    def _peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self, expected: str | None = None) -> str:
        token = self._peek()
        if token is None or (expected is not None and token.upper() != expected):
            raise _validation(f"Invalid ConditionExpression near {token!r}")
        self.position += 1
        return token

    def _or(self) -> Callable[[Item | None], bool]:
        parts = [self._and()]
        while (self._peek() or "").upper() == "OR":
            self._take()
            parts.append(self._and())
        return lambda item: any(part(item) for part in parts)

    def _and(self) -> Callable[[Item | None], bool]:
        parts = [self._not()]
        while (self._peek() or "").upper() == "AND":
            self._take()
            parts.append(self._not())
        return lambda item: all(part(item) for part in parts)

    def _not(self) -> Callable[[Item | None], bool]:
        if (self._peek() or "").upper() == "NOT":
            self._take()
            inner = self._not()
            return lambda item: not inner(item)
        return self._primary()

    def _primary(self) -> Callable[[Item | None], bool]:
        token = self._take()
        if token == "(":
            inner = self._or()
            self._take(")")
            return inner
        if token in ("attribute_exists", "attribute_not_exists"):
            self._take("(")
            name = self._name(self._take())
            self._take(")")
            if token == "attribute_exists":
                return lambda item: item is not None and name in item
            return lambda item: item is None or name not in item
        left = self._operand(token)
        operator = self._take()
        if operator not in _COMPARISONS:
            raise NotImplementedError(f"memory DynamoDB: condition operator {operator!r}")
        right = self._operand(self._take())

        def compare(item: Item | None) -> bool:
            a, b = _comparable(left(item)), _comparable(right(item))
            if operator == "<>":  # moto's reading: a missing attribute differs from any value
                return a != b
            if a is None or b is None or a[0] != b[0]:
                return False
            if operator == "=":
                return bool(a[1] == b[1])
            if a[0] not in ("N", "S", "B"):
                raise _validation(f"cannot order values of type {a[0]}")
            ordered: bool = {
                "<": a[1] < b[1],
                "<=": a[1] <= b[1],
                ">": a[1] > b[1],
                ">=": a[1] >= b[1],
            }[operator]
            return ordered

        return compare

    def _name(self, token: str) -> str:
        if token.startswith("#"):
            if token not in self.names:
                raise _validation(f"undefined attribute name {token}")
            return self.names[token]
        if "." in token:
            raise NotImplementedError(f"memory DynamoDB: nested path {token!r}")
        return token

    def _operand(self, token: str) -> Callable[[Item | None], Mapping[str, Any] | None]:
        if token.startswith(":"):
            if token not in self.values:
                raise _validation(f"undefined attribute value {token}")
            value: Mapping[str, Any] = self.values[token]
            return lambda _: value
        name = self._name(token)
        return lambda item: None if item is None else item.get(name)


def _condition_holds(request: Mapping[str, Any], current: Item | None) -> bool:
    expression = request.get("ConditionExpression")
    if expression is None:
        return True
    evaluate = _Condition.parse(
        expression,
        request.get("ExpressionAttributeNames") or {},
        request.get("ExpressionAttributeValues") or {},
    )
    return evaluate(current)
