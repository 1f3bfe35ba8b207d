"""MkDocs hooks of the documentation site (mkdocs.yml, `hooks:`).

A diagram's Mermaid source is for the browser to draw, not for search to show: every diagram
block is marked `data-search-exclude`, which the theme's search index skips.
"""

from __future__ import annotations

import re

_DIAGRAM = re.compile(r'<pre class="mermaid">')


def exclude_diagrams_from_search(html: str) -> str:
    """`html` with every Mermaid block marked for the search index to skip."""
    return _DIAGRAM.sub('<pre class="mermaid" data-search-exclude>', html)


def on_page_content(html: str, **_: object) -> str:
    return exclude_diagrams_from_search(html)
