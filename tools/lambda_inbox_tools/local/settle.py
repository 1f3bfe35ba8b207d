"""Waiting for a stack to settle: nothing pending, twice in a row, and the caller's condition."""

from __future__ import annotations

import time
from collections.abc import Callable

from .stack import LocalStack

SETTLE_SECONDS = 2.0


def wait_until_settled(
    local: LocalStack, deadline: float, done: Callable[[], bool], tick: Callable[[], None]
) -> bool:
    """Until nothing is pending (twice in a row, SETTLE_SECONDS apart) and `done()`."""
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        tick()
        if local.pending() == 0 and done():
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= SETTLE_SECONDS:
                return True
        else:
            quiet_since = None
        time.sleep(0.5)
    return False
