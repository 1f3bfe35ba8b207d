"""A cProfile of every thread of the process, for code whose network calls run in worker
threads (a profile of the main thread alone sees none of them).

Threads started while the profile is on (the consumer's call workers are created on first use)
get a `cProfile.Profile` of their own on their first profiled event; the main thread gets one
too; `stats()` adds them all up.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import threading
from typing import Any


class AllThreadsProfile:
    def __init__(self) -> None:
        self._profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def _start_in_this_thread(self, *_: Any) -> None:
        profile = cProfile.Profile()
        with self._lock:
            self._profiles.append(profile)
        profile.enable()  # replaces this bootstrap function for the rest of the thread

    def __enter__(self) -> AllThreadsProfile:
        threading.setprofile(self._start_in_this_thread)
        self._start_in_this_thread()
        return self

    def __exit__(self, *_: object) -> None:
        threading.setprofile(None)
        for profile in self._profiles:
            profile.disable()

    def top(self, limit: int = 20, sort: str = "tottime") -> str:
        """The `limit` functions with the most time of their own, over every thread, leaving
        out idle waiting (worker threads waiting for work, locks, sleeps), which is not CPU."""
        if not self._profiles:
            return "no profile"
        out = io.StringIO()
        stats = pstats.Stats(*self._profiles, stream=out)
        table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
        for key in [key for key in table if key[2] in IDLE]:
            del table[key]
        stats.sort_stats(sort).print_stats(limit)
        return out.getvalue()


#: Functions that wait rather than work, left out of `top`.
IDLE = frozenset(
    {
        "<method 'get' of '_queue.SimpleQueue' objects>",
        "<method 'acquire' of '_thread.lock' objects>",
        "<built-in method time.sleep>",
        "<method 'wait' of '_thread.lock' objects>",
    }
)
