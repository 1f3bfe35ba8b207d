"""`make docs-build`'s last steps: no page of the built site loads anything from another site.

Usage: .venv/bin/python scripts/check_site.py [SITE_DIR]   (default: site)
       PYTHONPATH=. .venv-docs/bin/python scripts/check_site.py --browser [SITE_DIR]

Without `--browser`, what the HTML and the stylesheets name (devkit/site_check.py). With it, every
page loaded from loopback in headless Chromium, failing on any request to another host
(devkit/site_browser.py); before the site, a planted page that fetches from elsewhere at run time
must be caught, or the check itself is broken.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from devkit.site_check import site_problems


def check_html(site: Path, pages: int) -> int:
    problems = site_problems(site)
    for problem in problems:
        print(f"loads from another site: {problem}")
    print(
        f"{pages} pages checked: " + ("FAILED" if problems else "everything is served by the site")
    )
    return 1 if problems else 0


def check_in_browser(site: Path, pages: int) -> int:
    from devkit.site_browser import PLANTED_PAGE, PLANTED_REQUESTS, foreign_requests

    with tempfile.TemporaryDirectory() as planted:
        (Path(planted) / "index.html").write_text(PLANTED_PAGE)
        caught = foreign_requests(Path(planted))
    if caught != {"index.html": PLANTED_REQUESTS}:
        print(f"the browser check is broken: on the planted page it saw {caught}")
        return 1
    found = foreign_requests(site)
    for page, urls in found.items():
        for url in urls:
            print(f"{page}: requested from another host: {url}")
    print(
        f"{pages} pages loaded in headless Chromium: "
        + ("FAILED" if found else "no request left the site's host")
    )
    return 1 if found else 0


def main(argv: list[str]) -> int:
    browser = "--browser" in argv
    args = [arg for arg in argv if arg != "--browser"]
    site = Path(args[0] if args else "site")
    pages = len(list(site.rglob("*.html")))
    if not pages:
        print(f"{site}: no pages (build the site first)")
        return 1
    return check_in_browser(site, pages) if browser else check_html(site, pages)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
