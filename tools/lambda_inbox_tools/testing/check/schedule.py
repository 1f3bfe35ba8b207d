"""The faults every run of the check owes, and at which write of an invocation each falls.

A run first plays an invocation of new work without a fault (its first overlap, `Driver`
measures it): the most writes one message of new work made there is `W`, the writes a message
commits in. Then it owes each kind of fault (a crash just after a write, a crash just before
one, a write that fails after the SDK's retries, DynamoDB's own failure of a write, a lost
answer that the SDK sends again) at the first write of an invocation of new work, and, when
`W` is 2 or more, each kind again at a write of 2..W that moves with the seed:

- a crash just after write `2 + (seed - 1) mod (W - 1)`;
- a crash just before write `2 + (seed + 1) mod (W - 1)`;
- a failed write at `2 + (seed + 2) mod (W - 1)`;
- DynamoDB's own failure of write `2 + (seed + 3) mod (W - 1)`;
- a lost answer at write `2 + seed mod (W - 1)`.

So every kind falls at write 1 in every run and at every write 2..W within W - 1 consecutive
seeds; and in each run, for W up to 5, an invocation of new work stops after each of its writes
1..W-1 once at least (a crash just after write k, or a crash or a failure at write k + 1): a
consumer that commits a message in separate writes, after any number of harmless ones, leaves
some of them done and the rest not. The faults at write 1 come first; of the others, those that
stop between a message's writes, in case the run runs out of new work before the rest.
"""

from __future__ import annotations

from .. import crashes

__all__ = ["KINDS", "SURVIVED", "owed_faults"]

#: The kinds of fault, in the order a run owes them, with the offset of each one's write.
KINDS: tuple[tuple[crashes.When, int], ...] = (
    ("error", 2),
    ("dynamodb", 3),
    ("before", 1),
    ("after", -1),
    ("lost", 0),
)
#: The kinds after which the handler goes on (it sees a failed write, not the end of its runtime).
SURVIVED: tuple[crashes.When, ...] = ("error", "dynamodb")


def owed_faults(seed: int, writes: int) -> list[tuple[crashes.When, int]]:
    """(kind, write) of each fault a run of `seed` owes, for messages of `writes` writes."""
    first: list[tuple[crashes.When, int]] = [(kind, 1) for kind, _ in KINDS]
    if writes < 2:
        return first
    later = [(kind, 2 + (seed + offset) % (writes - 1)) for kind, offset in KINDS]
    return first + sorted(later, key=lambda fault: not 0 < _stopped_after(*fault) < writes)


def _stopped_after(kind: crashes.When, write: int) -> int:
    """How many of its writes an invocation made when `kind` fell at `write`."""
    return write if kind in ("after", "lost") else write - 1
