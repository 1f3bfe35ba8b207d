"""The invocation's deadline: Lambda's time left minus a safety margin, on an injectable clock.

The margin scales with the budget (a fraction of the time left at the start, capped by the
retry policy's margin), so a function with the smallest timeout (3 s) still works for most of
its budget while a long one keeps a few seconds for answering.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from .config import RetryPolicy


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK = SystemClock()


@dataclass(frozen=True)
class Deadline:
    """When this invocation stops starting work; `None` means no deadline (tests, scripts)."""

    ends_at: float | None
    clock: Clock = SYSTEM_CLOCK

    @classmethod
    def from_context(
        cls, context: Any, policy: RetryPolicy, clock: Clock = SYSTEM_CLOCK
    ) -> Deadline:
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if not callable(remaining):
            return cls(None, clock)
        budget = max(0.0, remaining() / 1000)
        return cls(clock.monotonic() + budget - policy.margin_for(budget), clock)

    def left(self) -> float | None:
        """Seconds left before the deadline (negative once past it), None without one."""
        return None if self.ends_at is None else self.ends_at - self.clock.monotonic()

    def expired(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def allows(self, seconds: float) -> bool:
        left = self.left()
        return left is None or left > seconds

    def sleep(self, seconds: float) -> bool:
        """Sleep if the deadline leaves room for it; False (without sleeping) when it does not."""
        if not self.allows(seconds):
            return False
        self.clock.sleep(seconds)
        return True
