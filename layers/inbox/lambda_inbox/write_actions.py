"""The actions of a transaction in DynamoDB's wire format, their sizes, and the rules for
merging commuting updates.

An update *commutes* when its order against other such updates of the item cannot matter: an
`UpdateExpression` of `ADD` clauses only, every value a number, no condition (see
`commuting_shape`). Group commit may merge the commuting updates of several messages on one
item into a single action of summed values (docs/concepts.md, "Commuting updates").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal, DecimalException, localcontext
from functools import cached_property
from typing import Any, Literal

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from .config import MAX_ITEM_BYTES
from .errors import UnitOfWorkError

ActionKind = Literal["Put", "Update", "Delete", "ConditionCheck"]
_NAME_PLACEHOLDER = re.compile(r"#[A-Za-z0-9_]+")
#: `ADD path :value[, path :value ...]` and nothing else (paths may be nested: `a.b`, `#n[0]`).
_ADD_ONLY = re.compile(
    r"\s*ADD\s+[#A-Za-z0-9_.\[\]]+\s+:[A-Za-z0-9_]+"
    r"(\s*,\s*[#A-Za-z0-9_.\[\]]+\s+:[A-Za-z0-9_]+)*\s*",
    re.IGNORECASE,
)
_VALUE_PLACEHOLDER = re.compile(r":[A-Za-z0-9_]+")
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def serialize(value: Any, *, where: str) -> dict[str, Any]:
    """Python value -> DynamoDB attribute value, with an error that says where it failed."""
    try:
        return dict(_serializer.serialize(value))
    except TypeError as error:
        hint = " (use int or Decimal for numbers)" if isinstance(value, float) else ""
        raise UnitOfWorkError(f"{where}: {error}{hint}") from None
    except DecimalException as error:  # Inexact, Rounded, Overflow, Underflow
        raise UnitOfWorkError(
            f"{where}: {type(error).__name__}: DynamoDB numbers have at most 38 significant "
            "digits, between 1E-130 and 9.9E+125"
        ) from None


def deserialize_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


def attribute_size(value: Mapping[str, Any]) -> int:
    """DynamoDB's size of one attribute value (close enough to plan limits)."""
    (kind, inner), *_ = value.items()
    if kind in ("S", "B"):
        return len(inner.encode("utf-8")) if isinstance(inner, str) else len(inner)
    if kind == "N":
        return len(str(inner)) // 2 + 2
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(attribute_size({kind[0]: member}) for member in inner)
    if kind == "L":
        return 3 + sum(attribute_size(member) + 1 for member in inner)
    return 3 + sum(len(k.encode("utf-8")) + attribute_size(v) + 1 for k, v in inner.items())


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    return sum(len(name.encode("utf-8")) + attribute_size(value) for name, value in item.items())


@dataclass(frozen=True)
class WriteAction:
    """One action of a transaction, already serialized to DynamoDB's wire format."""

    kind: ActionKind
    table: str
    key: Mapping[str, Any]
    request: Mapping[str, Any]
    label: str
    size: int
    #: Commutes with other updates of the same item and shape (see `commuting_shape`).
    commutes: bool = False

    @cached_property
    def merge_shape(self) -> str | None:
        """What commuting updates must share to merge into one action: the update expression and
        its names (values are summed per placeholder). None for an action that never merges."""
        if not self.commutes:
            return None
        names = self.request.get("ExpressionAttributeNames") or {}
        return json.dumps([self.request["UpdateExpression"], names], sort_keys=True)

    @cached_property
    def item_identity(self) -> str:
        """Identifies the item this action touches (DynamoDB allows one action per item)."""
        return self.table + "|" + json.dumps(self.key, sort_keys=True)

    def transact_item(self) -> dict[str, Any]:
        return {self.kind: dict(self.request)}


@dataclass(frozen=True)
class FailedCondition:
    """A domain action whose condition did not hold, with the item as it stood (if returned)."""

    action: WriteAction
    item: Mapping[str, Any] | None

    @property
    def label(self) -> str:
        return self.action.label


@dataclass(frozen=True)
class ConditionFailures:
    """What the handler learns when its conditions fail: which actions, and the current items."""

    failed: tuple[FailedCondition, ...]

    @property
    def labels(self) -> frozenset[str]:
        return frozenset(failure.label for failure in self.failed)

    def __contains__(self, label: object) -> bool:
        return label in self.labels

    def __iter__(self) -> Iterator[FailedCondition]:
        return iter(self.failed)

    def any_startswith(self, prefix: str) -> bool:
        return any(label.startswith(prefix) for label in self.labels)


def commuting_shape(
    expression: str, condition: str | None, values: Mapping[str, Any] | None
) -> str | None:
    """None when an update commutes with every other update of the same expression on its item;
    otherwise why not. It commutes when the expression is `ADD` clauses only (no SET, REMOVE or
    DELETE), every value is a number (int or Decimal), and there is no condition: its effect is
    to add constants, whatever the item holds and whatever other such updates ran before."""
    if condition is not None:
        return "it has a condition"
    if not _ADD_ONLY.fullmatch(expression):
        return "its expression is not `ADD path :value, ...` only"
    if not values or any(
        not isinstance(value, (int, Decimal)) or isinstance(value, bool)
        for value in values.values()
    ):
        return "not every value it adds is a number"
    return None


def merge_commuting(transact_item: Mapping[str, Any], action: WriteAction) -> dict[str, Any]:
    """`transact_item` (an `Update` of the same item and merge shape as `action`) with
    `action`'s values added to its own, placeholder by placeholder: applying the merged update
    once has the effect of applying each of them, in any order. The sums are exact."""
    if action.merge_shape is None:
        raise UnitOfWorkError(f"{action.label}: this update does not commute")
    request = dict(transact_item["Update"])
    values = dict(request["ExpressionAttributeValues"])
    with localcontext() as context:
        context.prec = 1000  # DynamoDB numbers have 38 digits within 10^-130..10^126: exact
        for placeholder, value in action.request["ExpressionAttributeValues"].items():
            total = Decimal(values[placeholder]["N"]) + Decimal(value["N"])
            values[placeholder] = {"N": str(total)}
    request["ExpressionAttributeValues"] = values
    return {"Update": request}


def key_of(request: Mapping[str, Any], key: Mapping[str, Any]) -> dict[str, Any]:
    """The serialized key of the touched item (Puts carry it inside their item)."""
    if "Key" in request:
        return dict(request["Key"])
    return {name: request["Item"][name] for name in key}


def check_placeholders(
    where: str, expressions: str, names: Mapping[str, str], values: Mapping[str, Any]
) -> None:
    # Malformed names first: they can never appear in an expression, so they would otherwise
    # be reported as merely unused.
    for placeholders, pattern, form in (
        (names, _NAME_PLACEHOLDER, "#name"),
        (values, _VALUE_PLACEHOLDER, ":value"),
    ):
        for placeholder in placeholders:
            if not pattern.fullmatch(placeholder):
                raise UnitOfWorkError(f"{where}: {placeholder!r} is not a '{form}' placeholder")
    used_names = set(_NAME_PLACEHOLDER.findall(expressions))
    used_values = set(_VALUE_PLACEHOLDER.findall(expressions))
    for kind, used, defined in (
        ("name", used_names, set(names)),
        ("value", used_values, set(values)),
    ):
        if missing := sorted(used - defined):
            raise UnitOfWorkError(f"{where}: expression {kind} placeholders not defined: {missing}")
        if unused := sorted(defined - used):
            raise UnitOfWorkError(f"{where}: expression {kind}s defined but never used: {unused}")


def serialized_item(
    where: str, item: Mapping[str, Any], key_attributes: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The key (Python values) and the serialized item of a `put`, within DynamoDB's 400 KB."""
    key = {name: item[name] for name in key_attributes if name in item}
    if not key:
        raise UnitOfWorkError(f"{where}: the item has none of the key attributes {key_attributes}")
    serialized = {
        name: serialize(value, where=f"{where}, {name!r}") for name, value in item.items()
    }
    size = item_size(serialized)
    if size > MAX_ITEM_BYTES:
        raise UnitOfWorkError(f"{where}: item is {size} bytes, DynamoDB allows {MAX_ITEM_BYTES}")
    return key, serialized


def serialized_key(where: str, key: Mapping[str, Any]) -> dict[str, Any]:
    """A key of strings, numbers or bytes, serialized."""
    if not key:
        raise UnitOfWorkError(f"{where}: the key is empty")
    serialized = {}
    for name, value in key.items():
        if not isinstance(value, (str, int, Decimal, bytes)) or isinstance(value, bool):
            raise UnitOfWorkError(
                f"{where}: key attribute {name!r} must be a string, number or bytes"
            )
        serialized[name] = serialize(value, where=f"{where}, key {name!r}")
    return serialized


def complete_request(
    where: str,
    request: dict[str, Any],
    condition: str | None,
    names: Mapping[str, str] | None,
    values: Mapping[str, Any] | None,
) -> int:
    """Add the condition and the expression names and values to `request`, every placeholder
    checked; returns the bytes the values add."""
    if not request.get("TableName"):
        raise UnitOfWorkError(f"{where}: the table name is empty")
    if condition is not None:
        if not condition.strip():
            raise UnitOfWorkError(f"{where}: the condition is empty")
        request["ConditionExpression"] = condition
    expressions = " ".join(
        request.get(part, "") for part in ("UpdateExpression", "ConditionExpression")
    )
    check_placeholders(where, expressions, names or {}, values or {})
    if names:
        request["ExpressionAttributeNames"] = dict(names)
    if not values:
        return 0
    request["ExpressionAttributeValues"] = {
        placeholder: serialize(value, where=f"{where}, {placeholder}")
        for placeholder, value in values.items()
    }
    return item_size(request["ExpressionAttributeValues"])
