"""Lambda event filtering (`FilterCriteria`), as the event source mapping applies it before
invoking: a record is delivered when any pattern matches it, and a record no pattern matches is
dropped as processed.

A pattern is a JSON object mirroring the record: nested objects descend into the record's
fields, and a list at a leaf holds alternatives, each a value (exact match, `null` included) or
one of the rules `prefix`, `suffix`, `equals-ignore-case`, `anything-but` (a value or a list),
`exists` and `numeric` (comparisons such as `[">", 0, "<=", 5]` or `["=", 3]`). A field holding
a list matches when any of its elements does. A rule it does not know is an error, not a silent
non-match.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_MISSING = object()
_NUMERIC: dict[str, Callable[[float, float], bool]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class FilterError(ValueError):
    """A pattern uses a rule the local stack does not know."""


def passes(patterns: Sequence[Mapping[str, Any]], record: Mapping[str, Any]) -> bool:
    """Whether `record` is delivered: no patterns, or one of them matches."""
    return not patterns or any(matches(pattern, record) for pattern in patterns)


def matches(pattern: Mapping[str, Any], value: Any) -> bool:
    for name, rule in pattern.items():
        field = value.get(name, _MISSING) if isinstance(value, Mapping) else _MISSING
        if isinstance(rule, Mapping):
            if field is _MISSING or not matches(rule, field):
                return False
        elif isinstance(rule, list):
            candidates = field if isinstance(field, list) else [field]
            if not any(_leaf(r, c) for r in rule for c in candidates):
                return False
        else:
            raise FilterError(f"pattern field {name!r}: expected an object or a list, got {rule!r}")
    return True


def _leaf(rule: Any, field: Any) -> bool:
    if not isinstance(rule, Mapping):
        return field is not _MISSING and field == rule
    if len(rule) != 1:
        raise FilterError(f"a rule holds exactly one operator: {rule!r}")
    ((kind, argument),) = rule.items()
    if kind == "exists":
        return (field is not _MISSING) == bool(argument)
    if field is _MISSING:
        return False
    if kind == "anything-but":
        excluded = argument if isinstance(argument, list) else [argument]
        return field not in excluded
    if kind == "prefix":
        return isinstance(field, str) and field.startswith(str(argument))
    if kind == "suffix":
        return isinstance(field, str) and field.endswith(str(argument))
    if kind == "equals-ignore-case":
        return isinstance(field, str) and field.lower() == str(argument).lower()
    if kind == "numeric":
        return _numeric(argument, field)
    raise FilterError(f"filter rule {kind!r} is not emulated locally")


def _numeric(comparisons: Sequence[Any], field: Any) -> bool:
    try:
        number = float(field)
    except (TypeError, ValueError):
        return False
    pairs = list(zip(comparisons[::2], comparisons[1::2], strict=True))
    for symbol, bound in pairs:
        if symbol not in _NUMERIC:
            raise FilterError(f"numeric comparison {symbol!r} is not known")
        if not _NUMERIC[symbol](number, float(bound)):
            return False
    return True
