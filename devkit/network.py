"""A modelled network for the benchmarks: a fixed delay in front of every HTTP request a botocore
client sends (a `before-send` hook, so SDK retries pay it too), because DynamoDB Local answers
on loopback with no network latency, which hides what a round trip costs on a real network."""

from __future__ import annotations

import time
from typing import Any


class ModelledLatency:
    """`ModelledLatency(clients).set(0.003)`: every request of these clients waits 3 ms before
    it is sent (in the thread that sends it); `set(0)` removes the delay."""

    def __init__(self, *clients: Any) -> None:
        self.seconds = 0.0
        for client in clients:
            client.meta.events.register("before-send", self._delay)

    def set(self, seconds: float) -> None:
        self.seconds = seconds

    def _delay(self, **_: Any) -> None:
        if self.seconds > 0:
            time.sleep(self.seconds)
