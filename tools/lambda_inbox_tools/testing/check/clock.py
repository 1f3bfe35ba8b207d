"""The effectively-once check's clock: the wall clock, moved on without waiting when the check
plays a late redelivery (`late`). Pass the same clock to the consumer's `InboxConfig(clock=...)`
so that the library stamps its records on the time the check plays."""

from __future__ import annotations

import time

__all__ = ["CheckClock"]


class CheckClock:
    """Epoch seconds, as `time.time()` gives them, plus every `advance` so far."""

    __slots__ = ("offset",)

    def __init__(self) -> None:
        #: Seconds added to the wall clock.
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        """Moves the clock on by `seconds` (not back)."""
        self.offset += max(0.0, seconds)
