"""The actions of a transaction, in DynamoDB's wire format (built by `requests`), what a
failed condition tells the handler, and the rules for merging commuting updates.

An update *commutes* when its order against other such updates of the item cannot matter: an
`UpdateExpression` of `ADD` clauses only, every value a number, no condition (see
`commuting_shape`). Group commit may merge the commuting updates of several messages on one
item into a single action of summed values (docs/concepts.md, "Commuting updates").
"""

# Annotations are evaluated at import (no `from __future__ import annotations`): a NamedTuple
# compiles each string annotation into a ForwardRef, which costs more at cold start.
import json
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, localcontext
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from lambda_inbox._errors import UnitOfWorkError
from lambda_inbox.store._attribute_values import item_identity

ActionKind = Literal["Put", "Update", "Delete", "ConditionCheck"]
#: `ADD path :value[, path :value ...]` and nothing else (paths may be nested: `a.b`, `#n[0]`).
_ADD_ONLY = (
    r"(?i)\s*ADD\s+[#A-Za-z0-9_.\[\]]+\s+:[A-Za-z0-9_]+"
    r"(\s*,\s*[#A-Za-z0-9_.\[\]]+\s+:[A-Za-z0-9_]+)*\s*"
)


def where(kind: str, table: str) -> str:
    """How errors name an action: `put on orders`."""
    return f"{kind.lower()} on {table}"


class WriteAction:
    """One action of a transaction, already serialized to DynamoDB's wire format."""

    __slots__ = (
        "_label",
        "commutes",
        "item_identity",
        "kind",
        "merge_shape",
        "plain_key",
        "request",
        "size",
        "table",
        "transact",
    )

    def __init__(
        self,
        kind: ActionKind,
        table: str,
        plain_key: Mapping[str, Any],
        request: Mapping[str, Any],
        label: str | None,
        size: int,
        commutes: bool = False,
    ) -> None:
        self.kind = kind
        self.table = table
        #: The key as the handler gave it (Python values).
        self.plain_key = plain_key
        self.request = request
        #: The action in `TransactItems` (`transact_item`).
        self.transact: dict[str, Any] = {kind: request}
        self._label = label
        self.size = size
        #: Commutes with other updates of the same item and shape (see `commuting_shape`).
        self.commutes = commutes
        #: Identifies the item this action touches (DynamoDB allows one action per item).
        self.item_identity = item_identity(table, plain_key)
        #: What commuting updates must share to merge into one action: the update expression
        #: and its names (values are summed per placeholder). None for an action that never
        #: merges.
        self.merge_shape: str | None = None
        if commutes:
            names = request.get("ExpressionAttributeNames") or {}
            self.merge_shape = json.dumps([request["UpdateExpression"], names], sort_keys=True)

    @property
    def key(self) -> dict[str, Any]:
        """The key in DynamoDB's wire format (a `Put` carries it inside its item)."""
        serialized: dict[str, Any] | None = self.request.get("Key")
        if serialized is not None:
            return serialized
        item = self.request["Item"]
        return {name: item[name] for name in self.plain_key}

    @property
    def label(self) -> str:
        """What `on_condition_failed` sees of this action: the handler's label, else
        `kind:table:key` (made when first asked: most actions never fail a condition)."""
        if self._label is None:
            key = json.dumps(self.plain_key, sort_keys=True, default=str)
            self._label = f"{self.kind.lower()}:{self.table}:{key}"
        return self._label

    @property
    def where(self) -> str:
        """How errors name this action: `put on orders`."""
        return where(self.kind, self.table)

    def __repr__(self) -> str:
        return f"WriteAction({self.kind}, {self.item_identity}, label={self.label!r})"

    def transact_item(self) -> dict[str, Any]:
        """The action in `TransactItems`: its request itself, never changed once made (a merge
        of commuting updates builds a new one)."""
        return self.transact


class FailedCondition(NamedTuple):
    """A domain action whose condition did not hold, with the item as it stood (if returned)."""

    action: WriteAction
    """The action of the unit of work whose condition failed."""
    item: Mapping[str, Any] | None
    """The item as it stood when the condition was checked (plain values), or None when the
    item did not exist or DynamoDB did not return it."""

    @property
    def label(self) -> str:
        """The action's `label=`, else `kind:table:key` (`delete:orders:{"pk": "O-1"}`)."""
        return self.action.label


class ConditionFailures:
    """What `on_condition_failed(payload, failed, uow)` learns when domain conditions fail:
    which actions, and the items as they stood.

    `"invoice" in failed` asks whether the action labelled `"invoice"` failed; iterating gives
    each `FailedCondition`; `failed.labels` is the set of failed labels.
    """

    __slots__ = ("failed",)

    def __init__(self, failed: tuple[FailedCondition, ...]) -> None:
        self.failed = failed
        """Each failed action with its item, in the unit of work's order."""

    def __repr__(self) -> str:
        return f"ConditionFailures({sorted(self.labels)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConditionFailures) and other.failed == self.failed

    def __hash__(self) -> int:
        return hash(self.failed)

    @property
    def labels(self) -> frozenset[str]:
        """The labels of the actions whose condition failed."""
        return frozenset(failure.label for failure in self.failed)

    def __contains__(self, label: object) -> bool:
        return label in self.labels

    def __iter__(self) -> Iterator[FailedCondition]:
        return iter(self.failed)

    def any_startswith(self, prefix: str) -> bool:
        """Whether a failed action's label starts with `prefix` (labels such as `"stock:SKU-1"`)."""
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
    if not _adds_only(expression):
        return "its expression is not `ADD path :value, ...` only"
    if not values or any(
        not isinstance(value, (int, Decimal)) or isinstance(value, bool)
        for value in values.values()
    ):
        return "not every value it adds is a number"
    return None


@lru_cache(maxsize=256)
def _adds_only(expression: str) -> bool:
    return re.fullmatch(_ADD_ONLY, expression) is not None


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
