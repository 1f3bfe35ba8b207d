"""The effectively-once check's clock: the wall clock, moved on without waiting when the check
plays a late redelivery (`late`). Pass the same clock to the consumer's `InboxConfig(clock=...)`
so that the library stamps its records on the time the check plays."""

from __future__ import annotations

import time
from datetime import timedelta

__all__ = ["CheckClock", "late_span"]


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


def late_span(seconds: float | timedelta) -> str:
    """`seconds` as days, hours and minutes ("2 d 5 h 56 min"), or seconds when under a minute."""
    total = seconds.total_seconds() if isinstance(seconds, timedelta) else seconds
    days, rest = divmod(int(total), 86400)
    hours, rest = divmod(rest, 3600)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{rest // 60} min"]
    return " ".join(p for p in parts if p and p != "0 min") or f"{int(total)} s"
