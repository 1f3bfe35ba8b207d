"""The documentation site in a browser: every page loaded from loopback in headless Chromium, and
every request it makes that goes to another host named.

`site_check` reads the HTML; this sees what the pages' scripts fetch when they run (the theme's
repository widget called api.github.com from every page, which no reading of the HTML shows).
Requests to other hosts are recorded and refused, so the check needs no network. It drives the
system's Chromium (Debian's `chromium`) through Playwright, installed in the documentation's
virtualenv (docs/requirements.txt); `scripts/check_site.py --browser` runs it.
"""

from __future__ import annotations

import importlib
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

LOOPBACK = "127.0.0.1"
#: Schemes that never leave the page (inline data, the page's own blobs).
_LOCAL_SCHEMES = {"data", "blob", "about", "chrome", "chrome-extension"}


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def served(site: Path) -> Iterator[str]:
    """`site` served on loopback; yields its base URL."""
    handler = partial(_QuietHandler, directory=str(site))
    server = ThreadingHTTPServer((LOOPBACK, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{LOOPBACK}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def is_foreign(url: str) -> bool:
    """Whether a request for `url` leaves the loopback host."""
    parts = urlsplit(url)
    return parts.scheme not in _LOCAL_SCHEMES and parts.hostname != LOOPBACK


def chromium_path() -> str:
    """The system's Chromium; raises when there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError("no chromium on PATH (apt-get install chromium)")


def foreign_requests(site: Path, *, settle_ms: int = 500) -> dict[str, list[str]]:
    """Page (relative to `site`) -> the URLs on other hosts it requested, for every page under
    `site` that requested any. Each page is loaded until its network is idle for `settle_ms`."""
    api: Any = importlib.import_module("playwright.sync_api")
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    found: dict[str, list[str]] = {}
    with served(site) as base, api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            context = browser.new_context(service_workers="block")
            for page_path in pages:
                requested: list[str] = []
                page = context.new_page()
                page.route("**/*", _refusing_foreign(requested))
                page.goto(base + page_path, wait_until="load")
                try:
                    page.wait_for_load_state("networkidle", timeout=10_000)
                except api.TimeoutError:
                    requested.append("(the page's network never went idle within 10 s)")
                page.wait_for_timeout(settle_ms)
                page.close()
                if requested:
                    found[page_path] = sorted(set(requested))
        finally:
            browser.close()
    return found


def _refusing_foreign(requested: list[str]) -> Any:
    """A route handler that records and aborts each request to another host."""

    def route(route: Any) -> None:
        if is_foreign(route.request.url):
            requested.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    return route


#: A page that loads from elsewhere only when its script runs: the check must name both requests.
PLANTED_PAGE = """<!doctype html>
<html><head><title>planted</title></head><body>
<p>Loads from other hosts only at run time.</p>
<script>
fetch("https://api.github.com/repos/lambda-inbox/lambda-inbox").catch(() => {});
const img = document.createElement("img");
img.src = "https://example.com/pixel.png";
document.body.appendChild(img);
</script>
</body></html>
"""
PLANTED_REQUESTS = [
    "https://api.github.com/repos/lambda-inbox/lambda-inbox",
    "https://example.com/pixel.png",
]
