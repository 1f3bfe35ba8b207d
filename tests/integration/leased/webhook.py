"""A scripted webhook receiver on 127.0.0.1 for leased-mode tests.

It answers each call with the next scripted behaviour (`"ok"`, an HTTP status such as `500`, or
`"timeout"`: sleep `slow_seconds`, then accept) and keeps the receiver's own idempotency: a key it
accepted once is answered 200 again without being accepted twice.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from lambda_inbox_tools.local.webhook import serve_webhook

Behaviour = str | int


class Webhook:
    def __init__(self, script: list[Behaviour] | None = None, slow_seconds: float = 2.0) -> None:
        self.script = list(script or [])
        self.slow_seconds = slow_seconds
        self.calls: Counter[str] = Counter()
        self.accepted: Counter[str] = Counter()
        self.bodies: list[bytes] = []
        self.url = ""
        self._lock = threading.Lock()

    def next_behaviour(self) -> Behaviour:
        with self._lock:
            return self.script.pop(0) if self.script else "ok"

    def answer(self, key: str, body: bytes) -> int:
        """Count the call, then answer it as the script says."""
        with self._lock:
            self.calls[key] += 1
            self.bodies.append(body)
        behaviour = self.next_behaviour()
        if behaviour == "timeout":
            time.sleep(self.slow_seconds)
        elif behaviour != "ok":
            return int(behaviour)
        self.accept(key)
        return 200

    def accept(self, key: str) -> None:
        with self._lock:
            if self.accepted[key] == 0:
                self.accepted[key] += 1


@contextmanager
def running_webhook(webhook: Webhook) -> Iterator[Webhook]:
    with serve_webhook(webhook.answer) as url:
        webhook.url = url
        yield webhook
