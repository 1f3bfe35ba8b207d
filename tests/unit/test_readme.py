"""README.md is the front page: at most 250 lines, the two set-up commands as they are, its links
resolved, and its Python snippet run (the site's home page shows the same consumer)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

from devkit.paths import REPO_ROOT
from lambda_inbox import InboxConsumer, UnitOfWork

README = REPO_ROOT / "README.md"
SNIPPET = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_the_front_page_is_short_and_keeps_the_two_commands() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    assert "```bash\nmake demo\n```" in text
    assert "```bash\nmake test\n```" in text


def test_every_link_to_a_file_of_the_repository_resolves() -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README.read_text()):
        assert (REPO_ROOT / target).exists(), target


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_consumer_in_a_few_lines_runs(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The front page's consumer, and the site's home page's."""
    (snippet,) = SNIPPET.findall((REPO_ROOT / page).read_text())
    monkeypatch.setenv("INBOX_TABLE", "inbox")
    (tmp_path / "consumer.py").write_text(snippet)
    namespace = runpy.run_path(str(tmp_path / "consumer.py"))
    assert isinstance(namespace["consumer"], InboxConsumer)
    order = namespace["OrderPlaced"](event_id="e-1", order_id="o-1", sku="RED", quantity=2)
    uow = UnitOfWork()
    namespace["reserve_stock"](order, uow)
    assert [(action.kind, action.table) for action in uow.actions] == [("Update", "stock")]
    assert namespace["handler"]({"Records": []}, None) == {"batchItemFailures": []}
