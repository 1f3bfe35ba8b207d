"""Everything a page of the documentation site loads must come from the site itself.

These machines reach no network but the package registries, and a reader's browser may not
either: a script, stylesheet, font, image or frame fetched from a CDN is a page that breaks
offline. `external_loads` names every such reference in one HTML page (links a reader clicks,
`<a href>`, are not loads); `scripts/check_site.py` runs it on every page and every stylesheet
of the built site (`make docs-build`).
"""

from __future__ import annotations

import html as html_text
import json
import re
from html.parser import HTMLParser
from pathlib import Path

#: (tag, attribute) pairs whose URL the browser fetches when it renders the page.
LOADED = {
    ("script", "src"),
    ("img", "src"),
    ("iframe", "src"),
    ("source", "src"),
    ("video", "src"),
    ("audio", "src"),
    ("embed", "src"),
    ("object", "data"),
}
#: `<link rel=...>` values whose href is fetched.
LOADED_LINKS = {"stylesheet", "preload", "modulepreload", "icon", "manifest", "prefetch"}
_REMOTE = re.compile(r"^(https?:)?//", re.IGNORECASE)
_CSS_URL = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])([^'")\s]+)""", re.IGNORECASE)


class _Loads(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "link" and LOADED_LINKS & set(values.get("rel", "").lower().split()):
            self._check(tag, values.get("href", ""))
        for name, value in values.items():
            if (tag, name) in LOADED:
                self._check(tag, value)
        if "style" in values:
            self.found += [f"{tag} style: {url}" for url in css_loads(values["style"])]

    def handle_data(self, data: str) -> None:
        if self.lasttag == "style":
            self.found += [f"style: {url}" for url in css_loads(data)]

    def _check(self, tag: str, url: str) -> None:
        if _REMOTE.match(url.strip()):
            self.found.append(f"{tag}: {url}")


def external_loads(html: str) -> list[str]:
    """Every resource `html` makes the browser fetch from another site."""
    parser = _Loads()
    parser.feed(html)
    return parser.found


def css_loads(css: str) -> list[str]:
    """Every `url(...)` and `@import` of `css` that points at another site."""
    return [url for url in _CSS_URL.findall(css) if _REMOTE.match(url)]


_DIAGRAM = re.compile(r'<pre class="mermaid"[^>]*>(?:<code>)?(.*?)(?:</code>)?</pre>', re.DOTALL)


def diagram_lines(page_html: str) -> list[str]:
    """The statement lines of every Mermaid diagram of a page (its second line onward: the
    first, such as `flowchart LR`, may be prose too), whitespace collapsed."""
    lines = []
    for source in _DIAGRAM.findall(page_html):
        statements = [" ".join(line.split()) for line in html_text.unescape(source).splitlines()]
        lines += [line for line in statements[1:] if len(line) > 12]
    return lines


def diagrams_in_search(site: Path) -> list[str]:
    """Every diagram line of the site's pages that the search index holds (search would show a
    diagram's raw source)."""
    index = site / "search" / "search_index.json"
    if not index.exists():
        return []
    texts = " ".join(
        " ".join(html_text.unescape(doc.get("text", "")).split())
        for doc in json.loads(index.read_text())["docs"]
    )
    problems = []
    for page in sorted(site.rglob("*.html")):
        problems += [
            f"search index: diagram source of {page.relative_to(site)}: {line}"
            for line in diagram_lines(page.read_text())
            if line in texts
        ]
    return problems


def site_problems(site: Path) -> list[str]:
    """`external_loads` of every page, `css_loads` of every stylesheet under `site`, and
    `diagrams_in_search`."""
    problems = diagrams_in_search(site)
    for page in sorted(site.rglob("*.html")):
        problems += [
            f"{page.relative_to(site)}: {load}" for load in external_loads(page.read_text())
        ]
    for sheet in sorted(site.rglob("*.css")):
        problems += [f"{sheet.relative_to(site)}: {url}" for url in css_loads(sheet.read_text())]
    return problems
