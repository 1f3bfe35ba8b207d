"""Group commit planning: which messages share a transaction, and in what order.

Messages that touch a common item (a hot `BALANCE`, the same inbox key) can never share a
transaction and must keep their delivery order, so each goes to the wave after the last wave
that touched any of its items. Everything else is free to commit together: a wave is cut into
transactions of at most 100 actions, 4 MB and `max_group_messages` messages, and the
transactions of one wave run concurrently. Serialisation happens only where items collide.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from .config import MAX_TRANSACTION_BYTES


class Plannable(Protocol):
    @property
    def items(self) -> frozenset[str]: ...

    @property
    def action_count(self) -> int: ...

    @property
    def size(self) -> int: ...


P = TypeVar("P", bound=Plannable)


def plan_waves(pending: Sequence[P]) -> list[list[P]]:
    """Waves in which no two messages touch the same item; order kept per item."""
    last_wave: dict[str, int] = {}
    waves: list[list[P]] = []
    for work in pending:
        wave = 1 + max((last_wave[item] for item in work.items if item in last_wave), default=-1)
        if wave == len(waves):
            waves.append([])
        waves[wave].append(work)
        for item in work.items:
            last_wave[item] = wave
    return waves


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
    """
    chunks: list[list[P]] = []
    current: list[P] = []
    touched: set[str] = set()
    actions = size = 0
    for work in wave:
        too_big = actions + work.action_count > max_actions or size + work.size > max_bytes
        full = too_big or len(current) >= max_messages or not touched.isdisjoint(work.items)
        if current and full:
            chunks.append(current)
            current, touched, actions, size = [], set(), 0, 0
        current.append(work)
        touched.update(work.items)
        actions += work.action_count
        size += work.size
    if current:
        chunks.append(current)
    return chunks
