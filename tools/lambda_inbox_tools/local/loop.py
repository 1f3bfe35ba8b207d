"""The thread behind every emulated event source: one cycle after another until stopped."""

from __future__ import annotations

import threading
from collections.abc import Callable

ERROR_PAUSE_SECONDS = 0.5


class PollingLoop:
    """Runs `cycle()` on a daemon thread until `stop()`, waiting `interval` seconds before each
    cycle (0: none). A cycle that raises is recorded in `errors` and followed by a short pause:
    a backend hiccup does not stop an event source mapping in Lambda either."""

    def __init__(
        self,
        label: str,
        cycle: Callable[[], object],
        *,
        errors: list[str],
        interval: float = 0.0,
        join_timeout: float = 10.0,
    ) -> None:
        self.label = label
        self.cycle = cycle
        self.errors = errors
        self.interval = interval
        self.join_timeout = join_timeout
        #: Set by `stop()`; cycles that wait check it, to end promptly.
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def _run(self) -> None:
        while not self.stopping.wait(self.interval):
            try:
                self.cycle()
            except Exception as error:
                self.errors.append(f"{type(error).__name__}: {error}")
                self.stopping.wait(ERROR_PAUSE_SECONDS)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.label, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=self.join_timeout)
