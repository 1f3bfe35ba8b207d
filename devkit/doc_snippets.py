"""The Python snippets of the README and the docs, as the tests read and run them.

A snippet is a ```` ```python ```` fenced block, also indented in a list item or an admonition; a
fence that says Python any other way (```` ```py ````, a title) is refused, so that no Python block
goes unread. An HTML comment on the line just before its fence
(invisible on the site) says how it runs, when it does not run in its page's session:

- `<!-- snippet: file tests/test_app.py -->`: a file of a project the page builds; the page's
  blocks naming files are written to a fresh folder (blocks naming one file are joined) and
  pytest runs the project in a fresh interpreter. A ```` ```toml ```` or ```` ```yaml ```` block
  so annotated is a file of the project too (its `pyproject.toml`, its `template.yaml`);
- `<!-- snippet: skip: <why> -->`: not run, for a block that cannot run here (a real AWS
  account, a deploy); the reason is required.

Every other block runs in its page's session: the page's blocks in order, in one namespace, like
a doctest session, after the page's preamble (kept in tests/unit/docs/test_doc_snippets.py). Before it
runs, a block is checked to import public names only (`lambda_inbox.__all__` and the documented
subpackages' `__all__`s).
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import CodeType

import lambda_inbox

#: Subpackages the API reference documents with an `__all__` of their own.
PUBLIC_SUBPACKAGES = ("lambda_inbox.reaper", "lambda_inbox.store", "lambda_inbox.wire")

_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)(?:<!--\s*snippet:(?P<note>[^\n]*?)-->\n(?P=indent))?"
    r"```python[ \t]*\n(?P<source>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
#: A project file in another language: only with its `file` annotation.
_FILE_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)<!--\s*snippet:(?P<note>\s*file\s[^\n]*?)-->\n(?P=indent)"
    r"```(?P<language>toml|yaml)[ \t]*\n(?P<source>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_NOTE = re.compile(r"^[ \t]*<!--\s*snippet:", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*(?P<fence>```+(?P<info>[^\n`]*))$", re.MULTILINE)
_PYTHON_WORDS = {"py", "python", "python3", "pycon"}


class SnippetNoteError(ValueError):
    """A snippet annotation the runner cannot follow (a skip without its reason, an unknown
    word, an annotation on no Python block), or a Python block it would not find (a fence that
    says Python other than as ```` ```python ````)."""


@dataclass(frozen=True, slots=True)
class Snippet:
    """One Python block of a page: its source, where it starts, and how it runs."""

    page: str
    line: int  # the page's line of the block's first source line
    source: str
    file: str | None = None  # a project file the block is
    skip: str | None = None  # why the block does not run
    language: str = "python"  # "toml" and "yaml" blocks are project files only

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def compiled(self) -> CodeType:
        """The block compiled under its page's name and line numbers, so a traceback points at
        the page."""
        return compile("\n" * (self.line - 1) + self.source, self.page, "exec")


def snippets(page: Path, root: Path) -> list[Snippet]:
    """The Python blocks of `page` (named relative to `root`), in order."""
    text = page.read_text()
    name = str(page.relative_to(root))
    for fence in _FENCE.finditer(text):
        word = re.split(r"[\s{}.=]+", fence["info"].strip("{. \t"))[0]
        if word in _PYTHON_WORDS and fence["fence"].rstrip() != "```python":
            line = text.count("\n", 0, fence.start()) + 1
            raise SnippetNoteError(f"{name}:{line}: fence a Python block as ```python, no more")
    found = []
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start("source")) + 1
        file, skip = _read_note(match["note"], f"{name}:{line}")
        source = _dedent(match["source"], match["indent"])
        found.append(Snippet(name, line, source, file=file, skip=skip))
    for match in _FILE_BLOCK.finditer(text):
        line = text.count("\n", 0, match.start("source")) + 1
        file, _ = _read_note(match["note"], f"{name}:{line}")
        source = _dedent(match["source"], match["indent"])
        found.append(Snippet(name, line, source, file=file, language=match["language"]))
    annotated = {block.line - 2 for block in found}
    for note in _NOTE.finditer(text):
        line = text.count("\n", 0, note.start()) + 1
        if line not in annotated:
            raise SnippetNoteError(f"{name}:{line}: a snippet annotation on no Python block")
    return sorted(found, key=lambda block: block.line)


def _dedent(source: str, indent: str) -> str:
    """A block inside a list item or an admonition, without the indentation of its fence."""
    return "".join(line.removeprefix(indent) for line in source.splitlines(keepends=True))


def _read_note(note: str | None, where: str) -> tuple[str | None, str | None]:
    if note is None:
        return None, None
    word, _, rest = note.strip().partition(" ")
    if word == "file" and rest.strip():
        return rest.strip(), None
    if word == "skip:" and rest.strip():
        return None, rest.strip()
    if word.startswith("skip"):
        raise SnippetNoteError(f"{where}: a skipped snippet must say why (`skip: <reason>`)")
    raise SnippetNoteError(f"{where}: unknown snippet annotation {note.strip()!r}")


def doc_pages(root: Path) -> list[Path]:
    """The README and every page under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def public_names() -> dict[str, set[str]]:
    """Module -> the names user code may import from it."""
    names = {"lambda_inbox": set(lambda_inbox.__all__)}
    for package in PUBLIC_SUBPACKAGES:
        names[package] = set(importlib.import_module(package).__all__)
    return names


def private_imports(source: str, public: Mapping[str, set[str]]) -> list[str]:
    """The imports of `source` that reach past the library's public contract."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lambda_inbox"):
            module = node.module or ""
            if module == "lambda_inbox_tools" or module.startswith("lambda_inbox_tools."):
                continue
            allowed = public.get(module)
            for alias in node.names:
                if allowed is None or alias.name not in allowed:
                    found.append(f"from {module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                if name.startswith("lambda_inbox.") and name not in public:
                    found.append(f"import {name}")
    return found


def project_files(blocks: list[Snippet]) -> dict[str, str]:
    """The project a page builds: file -> its blocks, joined in page order."""
    files: dict[str, list[str]] = {}
    for block in blocks:
        if block.file and not block.skip:
            files.setdefault(block.file, []).append(block.source)
    return {name: "\n\n".join(parts) for name, parts in files.items()}


def write_page_file(page: Path, name: str, target: Path) -> Path:
    """Write the file `name` of the project `page` builds (Getting started's `template.yaml`)
    to `target`, for the tools that read files: `make template-lint`, scripts/check_retention.py."""
    files = project_files(snippets(page.resolve(), page.resolve().parents[1]))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(files[name])
    return target


if __name__ == "__main__":  # python -m devkit.doc_snippets PAGE FILE TARGET
    import sys

    write_page_file(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
