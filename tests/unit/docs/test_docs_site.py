"""The documentation site's rules that `mkdocs build --strict` cannot see: every public name is
in the API reference, every page is in the navigation, and nothing a page loads comes from
another site (the check proven on the pages it must refuse)."""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped,unused-ignore]

import lambda_inbox
import lambda_inbox.reaper
import lambda_inbox_tools.testing
from devkit.doc_snippets import PUBLIC_SUBPACKAGES
from devkit.paths import REPO_ROOT
from devkit.site_browser import PLANTED_PAGE, PLANTED_REQUESTS, is_foreign
from devkit.site_check import css_loads, external_loads, site_problems

DOCS = REPO_ROOT / "docs"


def documented(page: str, package: str) -> set[str]:
    text = (DOCS / "reference" / page).read_text()
    return set(re.findall(rf"^::: {re.escape(package)}\.(\w+)$", text, re.MULTILINE))


def test_every_public_name_of_the_library_is_in_the_reference() -> None:
    subpackages = {package.removeprefix("lambda_inbox.") for package in PUBLIC_SUBPACKAGES}
    assert documented("library.md", "lambda_inbox") - subpackages == set(lambda_inbox.__all__)


def test_every_public_name_of_the_reaper_is_in_the_reference() -> None:
    """The documented subpackage too: each name of its `__all__` (a constant, which has no
    docstring to generate from, is written out beside them)."""
    text = (DOCS / "reference" / "library.md").read_text()
    names = documented("library.md", "lambda_inbox.reaper")
    constants = {name for name in lambda_inbox.reaper.__all__ if name.isupper()}
    assert names == set(lambda_inbox.reaper.__all__) - constants
    for name in constants:
        assert f"`{name}`" in text and repr(getattr(lambda_inbox.reaper, name)).strip("'") in text


def test_every_public_name_of_the_testing_kit_is_in_the_reference() -> None:
    names = set(lambda_inbox_tools.testing.__all__)
    assert documented("testing.md", "lambda_inbox_tools.testing") == names


def nav_pages(entries: list[object]) -> set[str]:
    pages: set[str] = set()
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages |= nav_pages(value) if isinstance(value, list) else {str(value)}
    return pages


def test_every_page_of_docs_is_in_the_navigation_and_the_lab_notes_out_of_the_site() -> None:
    """PERFORMANCE.md is excluded (not built, not searchable), not merely out of the nav; the
    pages link it on the repository."""
    config = yaml.load((REPO_ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert "PERFORMANCE.md" in config["exclude_docs"].split()
    assert "not_in_nav" not in config
    assert nav_pages(config["nav"]) == pages - {"PERFORMANCE.md"}
    for page in pages - {"PERFORMANCE.md"}:
        text = (DOCS / page).read_text()
        assert not re.search(r"\]\((\.\./)?PERFORMANCE\.md", text), (
            f"{page} links the notes in the site"
        )


def test_getting_started_is_among_the_first_three_pages() -> None:
    config = yaml.load((REPO_ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    first = [next(iter(entry.values())) for entry in config["nav"][:3]]
    assert "getting-started.md" in first


def test_the_site_loads_mermaid_from_itself_and_no_web_font() -> None:
    config = yaml.load((REPO_ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    assert config["theme"]["font"] == "false"
    assert config["extra_javascript"] == ["assets/javascripts/mermaid.min.js"]
    fetch = (REPO_ROOT / "scripts/fetch-mermaid.sh").read_text()
    assert 'VERSION="${MERMAID_NPM_VERSION:-11.' in fetch  # the major the theme's loader names


# ---- the check on what a page loads ----------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "load"),
    [
        ('<script src="https://unpkg.com/mermaid@11/dist/mermaid.min.js"></script>', "script"),
        ('<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">', "link"),
        ('<link rel="preload icon" href="//cdn.example.com/favicon.png">', "link"),
        ('<img src="http://example.com/diagram.png">', "img"),
        ('<iframe src="https://example.com/embed"></iframe>', "iframe"),
        ('<div style="background: url(https://example.com/a.png)"></div>', "div style"),
        ("<style>@import 'https://fonts.example.com/x.css';</style>", "style"),
    ],
    ids=["cdn-script", "web-font", "protocol-relative", "image", "frame", "inline-style", "import"],
)
def test_a_page_loading_from_another_site_is_named(html: str, load: str) -> None:
    (found,) = external_loads(f"<html><head></head><body>{html}</body></html>")
    assert found.startswith(f"{load}: ")


def test_links_and_the_sites_own_files_are_not_loads() -> None:
    html = (
        '<a href="https://docs.aws.amazon.com/lambda/">AWS</a>'
        '<script src="../assets/javascripts/mermaid.min.js"></script>'
        '<link rel="stylesheet" href="assets/stylesheets/main.css">'
        '<link rel="canonical" href="https://lambda-inbox.github.io/lambda-inbox/">'
        '<img src="data:image/svg+xml;base64,PHN2Zz4=">'
    )
    assert external_loads(html) == []
    assert css_loads("a { background: url('../images/x.svg') }") == []


def test_a_built_site_with_one_remote_stylesheet_fails(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text('<script src="assets/app.js"></script>')
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "main.css").write_text("@import url(https://example.com/font.css);")
    assert site_problems(tmp_path) == ["assets/main.css: https://example.com/font.css"]


# ---- diagrams kept out of search ---------------------------------------------------------------

DIAGRAM_PAGE = (
    '<pre class="mermaid"><code>flowchart LR\n'
    '    source["SQS queue"] --&gt;|batch| fn["your function"]\n'
    "</code></pre>"
)


def test_the_hook_marks_every_diagram_for_search_to_skip() -> None:
    hooks = runpy.run_path(str(REPO_ROOT / "scripts" / "docs_hooks.py"))
    marked = hooks["on_page_content"](DIAGRAM_PAGE + DIAGRAM_PAGE, page=None)
    assert marked.count('<pre class="mermaid" data-search-exclude>') == 2
    assert hooks["on_page_content"]("<pre><code>x</code></pre>") == "<pre><code>x</code></pre>"


def test_a_search_index_holding_a_diagrams_source_fails(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(DIAGRAM_PAGE)
    (tmp_path / "search").mkdir()
    index = tmp_path / "search" / "search_index.json"
    leaked = (
        '<pre><code>flowchart LR source["SQS queue"] --&gt;|batch| fn["your function"]</code></pre>'
    )
    index.write_text(json.dumps({"docs": [{"location": "", "text": leaked}]}))
    assert site_problems(tmp_path) == [
        'search index: diagram source of index.html: source["SQS queue"] -->|batch| fn["your function"]'
    ]
    index.write_text(json.dumps({"docs": [{"location": "", "text": "<p>SQS queue</p>"}]}))
    assert site_problems(tmp_path) == []


# ---- the check in a browser --------------------------------------------------------------------


def test_only_loopback_is_the_sites_own_host() -> None:
    assert not is_foreign("http://127.0.0.1:8000/assets/main.css")
    assert not is_foreign("data:image/svg+xml;base64,PHN2Zz4=")
    assert is_foreign("https://api.github.com/repos/lambda-inbox/lambda-inbox")
    assert is_foreign("http://localhost.example.com/x.js")
    assert is_foreign("//cdn.example.com/x.js")


DOCS_PYTHON = REPO_ROOT / ".venv-docs" / "bin" / "python"


@pytest.mark.integration
def test_the_browser_check_catches_a_page_that_fetches_from_elsewhere(tmp_path: Path) -> None:
    """In headless Chromium: the planted page's run-time requests fail the check (its self-test
    passes, the site fails), and a page that loads only its own files passes."""
    has_playwright = DOCS_PYTHON.exists() and (
        subprocess.run([DOCS_PYTHON, "-c", "import playwright"], check=False).returncode == 0
    )
    if not has_playwright or not shutil.which("chromium"):
        pytest.skip("needs .venv-docs with playwright and chromium (make docs-build installs them)")
    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.mkdir()
    good.mkdir()
    (bad / "index.html").write_text(PLANTED_PAGE)
    (good / "index.html").write_text('<script src="app.js"></script><img src="a.svg">')
    (good / "app.js").write_text("fetch('a.svg');")
    (good / "a.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')

    def check(site: Path) -> subprocess.CompletedProcess[str]:
        command = [str(DOCS_PYTHON), "scripts/check_site.py", "--browser", str(site)]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        return subprocess.run(
            command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False
        )

    failed = check(bad)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert f"index.html: requested from another host: {PLANTED_REQUESTS[0]}" in failed.stdout
    passed = check(good)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "no request left the site's host" in passed.stdout
