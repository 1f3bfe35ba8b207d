"""`--rate`: a token bucket that paces the mover's sends."""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    """At most `rate` tokens a second on average, bursts up to max(1, rate)."""

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.capacity = max(1.0, rate)
        self._tokens = self.capacity
        self._clock = clock
        self._sleep = sleep
        self._last = clock()

    def take(self, count: int = 1) -> None:
        """Wait until `count` tokens are there (at most `capacity`), then take them."""
        wanted = min(float(count), self.capacity)
        while True:
            now = self._clock()
            self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
            self._last = now
            if self._tokens >= wanted:
                self._tokens -= wanted
                return
            self._sleep((wanted - self._tokens) / self.rate)
