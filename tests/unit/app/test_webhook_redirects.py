"""customer_notifications follows no redirect: a permanent one (301, 308) is poison, a temporary
one (302, 303, 307) transient, and nothing is sent where it points, least of all to plain http
or another host. Against two loopback HTTP servers: the webhook and where it redirects to."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.handlers import load_function
from lambda_inbox import LeaseContext, PoisonMessage


@contextmanager
def _server(status: int, location: str | None = None) -> Iterator[tuple[str, list[str]]]:
    """A loopback server answering every request with `status` (and `Location`); yields its
    URL and the methods of the requests it got."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(self.command)
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(status)
            if location is not None:
                self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/notify", seen
    finally:
        server.shutdown()
        server.server_close()


def _post(
    aws: AppState, monkeypatch: pytest.MonkeyPatch, url: str
) -> tuple[ModuleType, Exception | None]:
    monkeypatch.setenv("NOTIFY_WEBHOOK_URL", url)
    notifications = load_function("customer_notifications")
    notification = notifications.CustomerNotification(
        event_id="evt-1", customer_id="c-1", order_id="o-1", template="shipped"
    )
    lease = LeaseContext("evt-1", "owner", 1, time.time() + 30)
    try:
        notifications.post_webhook(notification, lease)
    except Exception as error:
        return notifications, error
    return notifications, None


@pytest.mark.parametrize(
    ("status", "poison"), [(301, True), (308, True), (302, False), (303, False), (307, False)]
)
def test_a_redirect_to_another_host_is_not_followed(
    aws: AppState, monkeypatch: pytest.MonkeyPatch, status: int, poison: bool
) -> None:
    with _server(200) as (elsewhere, reached), _server(status, elsewhere) as (webhook, asked):
        notifications, error = _post(aws, monkeypatch, webhook)
    assert asked == ["POST"] and reached == []  # nothing sent where it pointed
    expected: Any = PoisonMessage if poison else notifications.WebhookUnavailable
    assert type(error) is expected
    assert f"HTTP {status}" in str(error) and "another scheme or host" in str(error)


@pytest.mark.parametrize(("status", "poison"), [(308, True), (307, False)])
def test_a_redirect_on_the_same_host_is_not_followed_either(
    aws: AppState, monkeypatch: pytest.MonkeyPatch, status: int, poison: bool
) -> None:
    """Following would repeat the POST without its body (301-303) or post somewhere nobody
    configured: the operator sets the final address instead."""
    with _server(status, "/notify/v2") as (webhook, asked):
        notifications, error = _post(aws, monkeypatch, webhook)
    assert asked == ["POST"]
    assert isinstance(error, PoisonMessage) is poison
    assert isinstance(error, notifications.WebhookUnavailable) is not poison
    assert "another scheme or host" not in str(error)


@pytest.mark.parametrize(
    ("location", "elsewhere"),
    [
        ("http://hooks.example.com/notify", True),  # https to plain http
        ("https://attacker.example.net/notify", True),
        ("https://hooks.example.com:8443/notify", True),
        ("/notify/v2", False),
        ("https://hooks.example.com/v2", False),
    ],
)
def test_where_a_redirect_points_is_named(
    aws: AppState, monkeypatch: pytest.MonkeyPatch, location: str, elsewhere: bool
) -> None:
    monkeypatch.setenv("NOTIFY_WEBHOOK_URL", "https://hooks.example.com/notify")
    notifications = load_function("customer_notifications")
    failure = notifications.redirect_failure("https://hooks.example.com/notify", 308, location)
    assert isinstance(failure, PoisonMessage)
    assert ("another scheme or host" in str(failure)) is elsewhere
    assert "/v2" not in str(failure)  # the origin only: a path may carry a token


def test_a_redirect_without_a_location_is_transient(
    aws: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _server(302) as (webhook, _):
        notifications, error = _post(aws, monkeypatch, webhook)
    assert isinstance(error, notifications.WebhookUnavailable)
    assert "without a Location" in str(error)
