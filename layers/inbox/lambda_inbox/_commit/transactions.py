"""A transaction of group commit: the decisions it commits, the `TransactWriteItems` request,
and which decision (and which of its actions) owns each transact item, so a cancellation reason
can be traced back to its message. A `CreatesItem` put sent alone is a transaction of one
decision whose request is a `PutItem`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from lambda_inbox._commit.actions import merge_commuting
from lambda_inbox._commit.send import PreparedPut, PreparedTransaction
from lambda_inbox._commit.settle import INBOX_ACTION
from lambda_inbox.store._attribute_values import ItemIdentity

if TYPE_CHECKING:
    from lambda_inbox._commit.decision import Decision
    from lambda_inbox.store import InboxStore

M = TypeVar("M")


class Transaction(Generic[M]):
    """Decisions that commit together, and the request that commits them."""

    __slots__ = ("_messages", "_positions", "decisions", "request", "shared")

    def __init__(
        self,
        decisions: list[Decision[M]],
        request: PreparedTransaction | PreparedPut,
        messages: list[int],
        positions: list[int],
        shared: dict[int, list[tuple[int, int]]] | None = None,
    ) -> None:
        self.decisions = decisions
        self.request = request
        #: For each transact item: the index of its decision, and of its action (or
        #: INBOX_ACTION).
        self._messages = messages
        self._positions = positions
        #: Transact items that merge the commuting updates of several decisions: every owner.
        self.shared = shared or {}

    @property
    def owners(self) -> list[tuple[int, int]]:
        """For each transact item: (index of its decision, index of its action or
        INBOX_ACTION)."""
        return list(zip(self._messages, self._positions, strict=True))


def build_transaction(
    store: InboxStore, decisions: list[Decision[M]], *, now: float
) -> Transaction[M]:
    """The transaction that commits `decisions`: each one's inbox `Put`, then its actions; the
    commuting updates of one item and shape become one action of summed values, owned by all."""
    items: list[dict[str, Any]] = []
    messages: list[int] = []
    positions: list[int] = []
    # Commuting updates of one item and shape: one action of summed values, many owners.
    merges: dict[tuple[ItemIdentity, str], int] = {}
    shared: dict[int, list[tuple[int, int]]] = {}
    for index, decision in enumerate(decisions):
        delivery = decision.delivery
        if decision.creates:  # the created item is its own inbox record
            items.append(decision.actions[0].transact)
            messages.append(index)
            positions.append(INBOX_ACTION)
            continue
        items.append(
            store.completion_put(
                delivery.message,
                delivery.key,
                delivery.fingerprint,
                decision.result,
                now=now,
                lease_owner=decision.lease_owner,
            )
        )
        messages.append(index)
        positions.append(INBOX_ACTION)
        actions = decision.actions
        if not decision.commuting_items:  # most decisions: every action is an item of its own
            items.extend([action.transact for action in actions])
            messages.extend([index] * len(actions))
            positions.extend(range(len(actions)))
            continue
        for position, action in enumerate(actions):
            shape = action.merge_shape
            if shape is not None:
                slot = merges.setdefault((action.item_identity, shape), len(items))
                if slot < len(items):
                    items[slot] = merge_commuting(items[slot], action)
                    first = (messages[slot], positions[slot])
                    shared.setdefault(slot, [first]).append((index, position))
                    continue
            items.append(action.transact)
            messages.append(index)
            positions.append(position)
    return Transaction(decisions, PreparedTransaction(items), messages, positions, shared)


def put_alone(decision: Decision[M]) -> Transaction[M]:
    """A `CreatesItem` decision's put, sent as a `PutItem` of its own: its reason (the stored
    item, when the condition fails) stands where a transaction's inbox put's would."""
    (action,) = decision.actions
    return Transaction([decision], PreparedPut(action.request), [0], [INBOX_ACTION])
