"""A transaction of group commit: the decisions it commits, the `TransactWriteItems` request,
and which decision (and which of its actions) owns each transact item, so a cancellation reason
can be traced back to its message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .commit import PreparedTransaction
from .settle import INBOX_ACTION
from .write_actions import ItemIdentity, merge_commuting

if TYPE_CHECKING:
    from .decision import Decision
    from .store import InboxStore

M = TypeVar("M")


class Transaction(Generic[M]):
    """Decisions that commit together, and the request that commits them."""

    __slots__ = ("decisions", "owners", "request", "shared")

    def __init__(
        self,
        decisions: list[Decision[M]],
        request: PreparedTransaction,
        owners: list[tuple[int, int]],
        shared: dict[int, list[tuple[int, int]]] | None = None,
    ) -> None:
        self.decisions = decisions
        self.request = request
        #: For each transact item: (index of its decision, index of its action or INBOX_ACTION).
        self.owners = owners
        #: Transact items that merge the commuting updates of several decisions: every owner.
        self.shared = shared or {}


def build_transaction(
    store: InboxStore, decisions: list[Decision[M]], *, now: float
) -> Transaction[M]:
    """The transaction that commits `decisions`: each one's inbox `Put`, then its actions; the
    commuting updates of one item and shape become one action of summed values, owned by all."""
    items: list[dict[str, Any]] = []
    owners: list[tuple[int, int]] = []
    # Commuting updates of one item and shape: one action of summed values, many owners.
    merges: dict[tuple[ItemIdentity, str], int] = {}
    shared: dict[int, list[tuple[int, int]]] = {}
    for index, decision in enumerate(decisions):
        delivery = decision.delivery
        items.append(
            store.completion_put(
                delivery.message,
                delivery.key,
                delivery.fingerprint,
                decision.uow.result,
                now=now,
                lease_owner=decision.lease_owner,
            )
        )
        owners.append((index, INBOX_ACTION))
        for position, action in enumerate(decision.actions):
            shape = action.merge_shape
            if shape is not None:
                slot = merges.setdefault((action.item_identity, shape), len(items))
                if slot < len(items):
                    items[slot] = merge_commuting(items[slot], action)
                    shared.setdefault(slot, [owners[slot]]).append((index, position))
                    continue
            items.append(action.transact_item())
            owners.append((index, position))
    return Transaction(decisions, PreparedTransaction(items), owners, shared)
