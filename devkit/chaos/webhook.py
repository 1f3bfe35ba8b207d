"""The chaos run's webhook provider: honours `Idempotency-Key`, fails some calls (503), refuses
the poison template (422)."""

from __future__ import annotations

import contextlib
import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from lambda_inbox_tools.local.webhook import serve_webhook

from .workload import REFUSED_TEMPLATE


class WebhookReceiver:
    """A provider on 127.0.0.1 that honours `Idempotency-Key`: the first successful call of a key
    is applied, later calls with that key are answered 200 without applying anything again."""

    def __init__(self, error_rate: float, seed: int) -> None:
        self.error_rate = error_rate
        self.rng = random.Random(seed)
        self.calls: Counter[str] = Counter()
        self.applied: Counter[str] = Counter()
        self.absorbed = 0
        self.refused = 0
        self.errors = 0
        self.url = ""
        self.lock = threading.Lock()
        #: Called (once) with the key of the next call, before it is answered (tests).
        self.during_call: Callable[[str], None] | None = None

    def answer(self, key: str, body: Mapping[str, Any]) -> int:
        with self.lock:
            hook, self.during_call = self.during_call, None
        if hook is not None:
            hook(key)
        with self.lock:
            self.calls[key] += 1
            if body.get("template") == REFUSED_TEMPLATE:
                self.refused += 1
                return 422
            if self.rng.random() < self.error_rate:
                self.errors += 1
                return 503
            if self.applied[key]:
                self.absorbed += 1
            else:
                self.applied[key] += 1
            return 200


@contextlib.contextmanager
def running_webhook(receiver: WebhookReceiver) -> Iterator[WebhookReceiver]:
    def answer(key: str, raw: bytes) -> int:
        return receiver.answer(key, json.loads(raw or b"{}"))

    with serve_webhook(answer) as url:
        receiver.url = url
        yield receiver
