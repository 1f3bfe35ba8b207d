"""A webhook receiver, for local stacks, tests and the chaos run.

It listens on loopback unless told otherwise: functions in containers (`sam local`) reach the
host at the docker bridge address, so the stack can bind it there (`--webhook-listen`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WEBHOOK_PATH = "/notify"


def webhook_url(host: str, port: int) -> str:
    """The URL `serve_webhook(..., host, port)` answers on."""
    return f"http://{host}:{port}{WEBHOOK_PATH}"


@contextmanager
def serve_webhook(
    answer: Callable[[str, bytes], int], host: str = "127.0.0.1", port: int = 0
) -> Iterator[str]:
    """An HTTP receiver on `host:port` (port 0: a free one): every POST is answered with
    `answer(Idempotency-Key, body)`, the status code. Yields the URL to post to."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status = answer(self.headers.get("Idempotency-Key", ""), body)
            with contextlib.suppress(OSError):  # the client gave up (timeout)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield webhook_url(host, int(server.server_address[1]))
    finally:
        server.shutdown()
        server.server_close()
