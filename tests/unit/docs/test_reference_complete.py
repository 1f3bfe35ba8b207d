"""The API reference is generated from the docstrings: every public name of the library has one,
and so does each of its fields, members, methods and properties (an attribute's docstring is the
string below it, or its name in backticks in the class's docstring). No docstring points the
reader at an internal file, and neither a docstring nor a page names a module path in backticks
that is not public (`lambda_inbox.store.x`, `outbox.OutboxRequest`): a reader can import, and the
API reference documents, public names only."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

import lambda_inbox
import lambda_inbox.reaper
from devkit.doc_snippets import PUBLIC_SUBPACKAGES
from devkit.paths import REPO_ROOT

PUBLIC = {name: getattr(lambda_inbox, name) for name in lambda_inbox.__all__}
CLASSES = {name: obj for name, obj in PUBLIC.items() if inspect.isclass(obj)}
INTERNAL_FILE = re.compile(
    r"(?<![*\w])\w+\.py\b|\b(commit|leases|store|sources|dead_letter|outbox|reaper|telemetry)/"
)


def class_node(cls: type) -> ast.ClassDef:
    (node,) = ast.parse(textwrap.dedent(inspect.getsource(cls))).body
    assert isinstance(node, ast.ClassDef)
    return node


def undocumented_attributes(cls: type) -> list[str]:
    """Public attributes of `cls` (class-level, and `self.x = ...` in `__init__`) with neither a
    docstring below them nor a mention in the class docstring."""
    node = class_node(cls)
    described = set(re.findall(r"`(\w+)", inspect.getdoc(cls) or ""))
    missing = []

    def scan(body: list[ast.stmt], *, in_init: bool) -> None:
        for statement, following in zip(body, [*body[1:], None], strict=True):
            name = None
            if isinstance(statement, ast.AnnAssign | ast.Assign):
                targets = (
                    [statement.target]
                    if isinstance(statement, ast.AnnAssign)
                    else statement.targets
                )
                for target in targets:
                    if isinstance(target, ast.Name) and not in_init:
                        name = target.id
                    elif (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        name = target.attr
            if name is None or name.startswith("_"):
                continue
            documented = (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            )
            if not documented and name not in described:
                missing.append(name)

    scan(node.body, in_init=False)
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
            scan(statement.body, in_init=True)
    return missing


def undocumented_methods(cls: type) -> list[str]:
    missing = []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        function: Any = member.fget if isinstance(member, property) else member
        function = getattr(function, "__func__", function)
        if inspect.isfunction(function) and not function.__doc__:
            missing.append(name)
    return missing


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_name_has_a_docstring(name: str) -> None:
    assert inspect.getdoc(PUBLIC[name]), name


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_field_member_and_method_is_documented(name: str) -> None:
    cls = CLASSES[name]
    assert undocumented_attributes(cls) == []
    assert undocumented_methods(cls) == []


@pytest.mark.parametrize("name", [*sorted(PUBLIC), "reaper.handler"])
def test_no_docstring_names_an_internal_file(name: str) -> None:
    obj = lambda_inbox.reaper.handler if name == "reaper.handler" else PUBLIC[name]
    texts = [inspect.getdoc(obj) or ""]
    if inspect.isclass(obj):
        texts += [inspect.getdoc(member) or "" for member in vars(obj).values()]
    for text in texts:
        assert not INTERNAL_FILE.search(text), text


def test_the_checks_catch_what_they_must() -> None:
    class Bare:
        """A class whose `known` field is described here."""

        known: int
        unknown: str
        documented: str
        """Below it."""

        def __init__(self) -> None:
            self.later = 1

        def method(self) -> None:
            pass

    assert undocumented_attributes(Bare) == ["unknown", "later"]
    assert undocumented_methods(Bare) == ["method"]
    assert INTERNAL_FILE.search("see lease.py for the rules")
    assert INTERNAL_FILE.search("in commit/settle")
    assert not INTERNAL_FILE.search("a `*_pb2.py` beside the function")


# ---- dotted names a reader is sent to --------------------------------------------------------

SUBMODULES = sorted(module.name for module in pkgutil.iter_modules(lambda_inbox.__path__))
#: A backticked dotted name in the library's name space: `lambda_inbox.x.y`, or `x.y` where `x`
#: is one of its modules (as docstrings write them).
DOTTED = re.compile(rf"`((?:lambda_inbox|{'|'.join(SUBMODULES)})(?:\.\w+)+)")
#: Pages whose subject is the library's inside (its modules are what they describe).
INSIDE_PAGES = {"docs/architecture.md", "docs/PERFORMANCE.md"}


def is_public(dotted: str) -> bool:
    """Whether a reader can import `dotted`: a name of `lambda_inbox.__all__` or of a documented
    subpackage's `__all__`, then its attributes (none private); `__all__` itself."""
    parts = dotted.removeprefix("lambda_inbox.").split(".")
    if parts == ["__all__"] or dotted == "lambda_inbox":
        return True
    namespaces = {"": lambda_inbox}
    for package in PUBLIC_SUBPACKAGES:
        namespaces[package.removeprefix("lambda_inbox.")] = importlib.import_module(package)
    for prefix, module in namespaces.items():
        rest = parts[1:] if prefix else parts
        if prefix and parts[0] != prefix:
            continue
        if not rest or rest == ["__all__"]:
            return bool(prefix)
        if rest[0] not in module.__all__:
            continue
        target: object = getattr(module, rest[0])
        for attribute in rest[1:]:
            if attribute.startswith("_") or not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def docstring_names() -> set[tuple[str, str]]:
    found = set()
    named: dict[str, object] = dict(PUBLIC)
    for package in PUBLIC_SUBPACKAGES:
        module = importlib.import_module(package)
        named |= {f"{package}.{n}": getattr(module, n) for n in module.__all__}
    for name, obj in named.items():
        texts = [inspect.getdoc(obj) or ""]
        if inspect.isclass(obj):
            members = [m for m in vars(obj).values() if callable(m) or isinstance(m, property)]
            texts += [inspect.getdoc(member) or "" for member in members]
        for text in texts:
            found |= {(name, m[1]) for m in DOTTED.finditer(text) if not is_public(m[1])}
    return found


def test_no_docstring_names_a_module_path_that_is_not_public() -> None:
    assert docstring_names() == set()


def page_names(page: Path) -> list[str]:
    text = page.read_text()
    return [
        f"{text.count(chr(10), 0, m.start()) + 1}: {m[1]}"
        for m in re.finditer(r"`(lambda_inbox(?:\.\w+)+)", text)
        if not is_public(m[1])
    ]


def test_no_page_names_a_module_path_that_is_not_public() -> None:
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
    found = {
        str(page.relative_to(REPO_ROOT)): names
        for page in pages
        if str(page.relative_to(REPO_ROOT)) not in INSIDE_PAGES and (names := page_names(page))
    }
    assert found == {}


def test_the_dotted_name_check_knows_public_from_private(tmp_path: Path) -> None:
    assert is_public("lambda_inbox.InboxConsumer.handle")
    assert is_public("lambda_inbox.reaper.Reaper.reap_once")
    assert is_public("lambda_inbox.__all__")
    assert not is_public("lambda_inbox._errors")
    assert not is_public("lambda_inbox.InboxConsumer._pipeline")
    assert not is_public("outbox.OutboxRequest")
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\nIt lives in `lambda_inbox.store.tables` and `lambda_inbox.UnitOfWork`.\n"
    )
    assert page_names(page) == ["3: lambda_inbox.store.tables"]
