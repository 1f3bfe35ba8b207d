"""The API reference is generated from the docstrings: every public name of the library has one,
and so does each of its fields, members, methods and properties (an attribute's docstring is the
string below it, or its name in backticks in the class's docstring). No docstring points the
reader at an internal file."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from typing import Any

import pytest

import lambda_inbox
import lambda_inbox.reaper

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
