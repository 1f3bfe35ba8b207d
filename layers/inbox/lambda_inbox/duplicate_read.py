"""When the batch read of the inbox keys comes before the commit (docs/concepts.md, "One request
per new batch").

The read only finds duplicates early: the inbox `Put` of every transaction is the real guard, and
a cancelled transaction names each taken key with its stored record, so a batch of new messages
commits in one request without it. The read comes first when something suggests a duplicate:

- a message delivered before (`InboundMessage.redelivered`: an SQS receive count above 1, a
  Kafka offset this execution environment has already seen for its partition, a dead letter or
  record replayed);
- recent batches of this consumer in this execution environment found duplicates: more than
  `RECENT_DUPLICATE_THRESHOLD` of them, counted with weight halving every `HALF_LIFE_BATCHES`;
- poison in the batch (found while identifying; poison found while deciding has the keys read
  then, before anything is sent; `pipeline`): a poison message that completed before is a
  duplicate, and nothing is dead-lettered while the inbox table cannot be read;
- leased mode (a lease is claimed per message: its record decides first);
- `InboxConfig.duplicate_read = "always"`. `"never"` skips it unless leased.

A duplicate found by the commit costs the cancelled attempt (docs/CAPACITY.md) and one more
request for the rest of its transaction; the read costs a request on every batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from .outcomes import Outcome

if TYPE_CHECKING:
    from .messages import InboundMessage
    from .outcomes import MessageResult

DuplicateRead = Literal["auto", "always", "never"]
DUPLICATE_READS: tuple[DuplicateRead, ...] = ("auto", "always", "never")
#: Share of recent batches holding a duplicate above which the read comes first. At 5%, the
#: cancelled attempts add 2.5% (at most 5%) to the write units that batches of new payments
#: commit, for a round trip saved on every batch (docs/CAPACITY.md, "Reading first or not").
RECENT_DUPLICATE_THRESHOLD = 0.05
HALF_LIFE_BATCHES = 10
_DECAY = 0.5 ** (1 / HALF_LIFE_BATCHES)


class ReadFirst:
    """Decides, batch by batch, whether the inbox keys are read before the commit."""

    __slots__ = ("_leased", "_mode", "recent_duplicates")

    def __init__(self, mode: DuplicateRead = "auto", *, leased: bool = False) -> None:
        self._mode = mode
        self._leased = leased
        #: Decaying share of recent batches that held a duplicate.
        self.recent_duplicates = 0.0

    def reason(self, messages: Sequence[InboundMessage]) -> str | None:
        """Why this batch reads first, or None when the commit finds its duplicates."""
        if self._leased:
            return "leased"
        if self._mode != "auto":
            return "always" if self._mode == "always" else None
        for message in messages:  # a loop, not any(...): no generator for every batch
            if message.redelivered:
                return "redelivered"
        if self.recent_duplicates > RECENT_DUPLICATE_THRESHOLD:
            return "recent_duplicates"
        return None

    def observe(self, results: Sequence[MessageResult]) -> None:
        """Count a finished batch: did it hold a duplicate (found by the read or the commit)?"""
        held = False
        for result in results:  # a loop, not any(...): no generator for every batch
            if result.outcome is Outcome.DUPLICATE:
                held = True
                break
        self.recent_duplicates = self.recent_duplicates * _DECAY + (1 - _DECAY) * held
