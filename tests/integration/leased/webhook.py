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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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

    def accept(self, key: str) -> None:
        with self._lock:
            if self.accepted[key] == 0:
                self.accepted[key] += 1


@contextmanager
def running_webhook(webhook: Webhook) -> Iterator[Webhook]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            key = self.headers.get("Idempotency-Key", "")
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            with webhook._lock:
                webhook.calls[key] += 1
                webhook.bodies.append(body)
            behaviour = webhook.next_behaviour()
            status = 200
            if behaviour == "timeout":
                time.sleep(webhook.slow_seconds)
                webhook.accept(key)
            elif behaviour == "ok":
                webhook.accept(key)
            else:
                status = int(behaviour)
            try:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:  # the client gave up (timeout)
                pass

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    webhook.url = f"http://127.0.0.1:{server.server_address[1]}/notify"
    try:
        yield webhook
    finally:
        server.shutdown()
        server.server_close()
