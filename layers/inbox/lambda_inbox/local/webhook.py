"""A webhook receiver on loopback, for local stacks, tests and the chaos run."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serve_webhook(answer: Callable[[str, bytes], int]) -> Iterator[str]:
    """An HTTP receiver on loopback: every POST is answered with `answer(Idempotency-Key, body)`,
    the status code. Yields the URL to post to."""

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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/notify"
    finally:
        server.shutdown()
        server.server_close()
