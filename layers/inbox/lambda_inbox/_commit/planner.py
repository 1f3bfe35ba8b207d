"""Group commit planning: which messages share a transaction, and in what order.

Messages that touch a common item (the same inbox key, an item they put) can never share a
transaction and must keep their delivery order, so each goes to the wave after the last wave
that touched any of its items. The exception is an item touched only by *commuting* updates
(`ADD` of numbers, no condition: a hot `BALANCE`): their order cannot matter, so messages whose
updates of that item have the same shape may share a wave, and one transaction, where their
updates are merged into one action. A commuting update still waits for every earlier
non-commuting touch of its item, and a non-commuting touch waits for every earlier touch.
Everything else is free to commit together: a wave is cut into transactions of at most 100
actions, 4 MB and `max_group_messages` messages, and the transactions of one wave run
concurrently. Serialisation happens only where items collide.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from lambda_inbox._config import MAX_TRANSACTION_BYTES

if TYPE_CHECKING:  # protocols type the code only: nothing checks them at run time
    from typing import Protocol

    class Plannable(Protocol):
        @property
        def items(self) -> frozenset[Hashable]: ...

        @property
        def action_count(self) -> int: ...

        @property
        def size(self) -> int: ...


P = TypeVar("P", bound="Plannable")
#: No commuting items: one shared empty mapping, not a new dict for every message.
_NONE: Mapping[Hashable, str] = MappingProxyType({})


def commuting_items(work: Plannable) -> Mapping[Hashable, str]:
    """The items `work` touches only through a commuting update, with that update's merge
    shape (`Decision.commuting_items`); none for a work that does not say."""
    found: Mapping[Hashable, str] | None = getattr(work, "commuting_items", None)
    return found or _NONE


#: What `plan_waves` knows of an item, in a list (one is made per item of every message):
#: the merge shape of its latest run of touches (None: a non-commuting touch), the earliest
#: wave another commuting touch of that shape may join, and the latest wave that touched it.
_SHAPE, _FLOOR, _LAST = 0, 1, 2


def plan_waves(pending: Sequence[P]) -> list[list[P]]:
    """Waves in which two messages share an item only through commuting updates of the same
    shape; delivery order kept per item for everything else."""
    if _touch_distinct_items(pending):  # the usual batch: one wave, without the walk below
        return [list(pending)] if pending else []
    state: dict[Hashable, list[Any]] = {}
    waves: list[list[P]] = []
    for work in pending:
        commuting = commuting_items(work)
        wave = 0
        for item in work.items:
            known = state.get(item)
            if known is None:
                continue
            shape = commuting.get(item) if commuting else None
            joins = shape is not None and shape == known[_SHAPE]
            wave = max(wave, known[_FLOOR] if joins else known[_LAST] + 1)
        while len(waves) <= wave:
            waves.append([])
        waves[wave].append(work)
        for item in work.items:
            shape = commuting.get(item) if commuting else None
            known = state.get(item)
            if known is not None and shape is not None and shape == known[_SHAPE]:
                known[_LAST] = max(known[_LAST], wave)
            else:
                floor = known[_LAST] + 1 if known is not None else 0
                state[item] = [shape, floor, wave]
    return waves


def _touch_distinct_items(pending: Sequence[Plannable]) -> bool:
    """No item is touched by two of `pending`: their union is as large as their sizes' sum (one
    pass in C over every item, not a set test and an update for each work)."""
    items = [work.items for work in pending]
    return len(frozenset().union(*items)) == sum(map(len, items))


def chunk_wave(
    wave: Sequence[P],
    *,
    max_actions: int,
    max_messages: int,
    max_bytes: int = MAX_TRANSACTION_BYTES,
) -> list[list[P]]:
    """Cut one wave into transactions that respect DynamoDB's limits, in order.

    A work that shares an item with the current transaction (possible once a handler answered a
    failed condition with other writes) starts a new one: one action per item per transaction.
    Commuting updates of the same shape on one item are the exception: they become one merged
    action, so only the first of them counts against `max_actions`.
    """
    chunks: list[list[P]] = []
    current: list[P] = []
    exclusive: set[Hashable] = set()
    shared: dict[Hashable, str] = {}
    actions = size = 0
    for work in wave:
        commuting = commuting_items(work)
        own = work.items
        cost = work.action_count
        clash = False
        if commuting:  # most work has none
            own = own - commuting.keys()
            cost -= sum(1 for item, shape in commuting.items() if shared.get(item) == shape)
            clash = any(
                item in exclusive or shared.get(item, shape) != shape
                for item, shape in commuting.items()
            )
        clash = clash or not own.isdisjoint(exclusive) or not own.isdisjoint(shared)
        too_big = actions + cost > max_actions or size + work.size > max_bytes
        if current and (too_big or clash or len(current) >= max_messages):
            chunks.append(current)
            current, exclusive, shared, actions, size = [], set(), {}, 0, 0
            cost = work.action_count
        current.append(work)
        exclusive.update(own)
        if commuting:
            shared.update(commuting)
        actions += cost
        size += work.size
    if current:
        chunks.append(current)
    return chunks
