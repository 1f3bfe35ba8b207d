"""The demo's webhook receiver: counts calls per Idempotency-Key, fails some first calls (HTTP
500: transient) and refuses one template (HTTP 422: poison) until the fix."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from lambda_inbox_tools.local.webhook import serve_webhook

REFUSED_TEMPLATE = "order-delayed"


class WebhookReceiver:
    """Counts calls per Idempotency-Key; accepts a key once (its own idempotency)."""

    def __init__(self, transient_keys: set[str]) -> None:
        self.transient_keys = set(transient_keys)
        self.refuse_template = True
        self.calls: Counter[str] = Counter()
        self.accepted: dict[str, bytes] = {}
        self.url = ""
        self._lock = threading.Lock()

    def answer(self, key: str, body: bytes) -> int:
        with self._lock:
            self.calls[key] += 1
            if key in self.transient_keys:
                self.transient_keys.discard(key)
                return 500
            if self.refuse_template and json.loads(body).get("template") == REFUSED_TEMPLATE:
                return 422
            self.accepted.setdefault(key, body)
            return 200


@contextmanager
def running_webhook(
    receiver: WebhookReceiver, host: str = "127.0.0.1", port: int = 0
) -> Iterator[WebhookReceiver]:
    with serve_webhook(receiver.answer, host, port) as url:
        receiver.url = url
        yield receiver
