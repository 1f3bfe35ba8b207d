"""README.md is the front page: at most 250 lines, the two set-up commands as they are, its links
resolved. Its Python snippet runs in tests/unit/docs/test_doc_snippets.py."""

from __future__ import annotations

import re

from devkit.paths import REPO_ROOT

README = REPO_ROOT / "README.md"


def test_the_front_page_is_short_and_keeps_the_two_commands() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    assert "```bash\nmake demo\n```" in text
    assert "```bash\nmake test\n```" in text


def test_every_link_to_a_file_of_the_repository_resolves() -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README.read_text()):
        assert (REPO_ROOT / target).exists(), target
