"""Every error code and exception is in the documented error reference (docs/errors.md) and in
the table of docs/concepts.md, and both documents say the same kind (poison or failure) for each
code as `ErrorCode` does."""

from __future__ import annotations

import builtins
import inspect
import re

from devkit.paths import REPO_ROOT
from lambda_inbox import _errors as errors

DOCS = REPO_ROOT / "docs"
REFERENCE = (DOCS / "errors.md").read_text()
CONCEPTS = (DOCS / "concepts.md").read_text()
CODES = {code.value for code in errors.ErrorCode}
#: `ErrorCode` lists poison codes first; the failures start at `inbox_unavailable`.
MEMBERS = list(errors.ErrorCode)
FIRST_FAILURE = MEMBERS.index(errors.ErrorCode.INBOX_UNAVAILABLE)
KINDS = {code.value: "poison" if n < FIRST_FAILURE else "failure" for n, code in enumerate(MEMBERS)}


def section(text: str, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    start = text.index(heading + "\n")
    rest = text[start + len(heading) :]
    end = re.search(rf"\n#{{1,{len(level)}}} ", rest)
    return rest[: end.start()] if end else rest


def table_codes(text: str) -> dict[str, str]:
    """`{code: the rest of its row}` for every table row whose first cell is a backticked code."""
    rows = re.findall(r"^\| `([a-z_]+)` \|(.*)$", text, flags=re.MULTILINE)
    return dict(rows)


def test_every_error_code_is_documented() -> None:
    missing = [code for code in CODES if f"`{code}`" not in REFERENCE]
    assert missing == []


def test_errors_md_lists_each_code_under_its_kind() -> None:
    poison = table_codes(section(REFERENCE, "## Poison codes"))
    failures = table_codes(section(REFERENCE, "## Failure codes"))
    assert set(poison) == {code for code, kind in KINDS.items() if kind == "poison"}
    assert set(failures) == {code for code, kind in KINDS.items() if kind == "failure"}


def test_the_concepts_table_names_every_code_once_with_its_kind() -> None:
    rows = table_codes(section(CONCEPTS, "## Poison and error codes"))
    assert set(rows) == CODES
    for code, rest in rows.items():
        kind = rest.split("|")[0].strip()
        assert kind == KINDS[code], (code, kind)


def test_every_exception_is_an_inbox_error_with_a_code_and_is_documented() -> None:
    exceptions = [
        value
        for value in vars(errors).values()
        if inspect.isclass(value)
        and issubclass(value, Exception)
        and value.__module__ == errors.__name__
    ]
    assert len(exceptions) >= 10
    for exception in exceptions:
        assert issubclass(exception, errors.InboxError), exception
        assert f"`{exception.__name__}`" in REFERENCE, exception
        assert isinstance(exception.code, str) and exception.code


def test_the_docs_name_only_exceptions_that_exist() -> None:
    """A doc naming an exception errors.py does not have (say, after a rename) is out of step."""
    names = {name for name, value in vars(errors).items() if inspect.isclass(value)}
    # Python's own, pydantic's, AWS's error codes and API names, the library's message types
    others = set(dir(builtins)) | {"ValidationError", "InternalServerError", "ThrottlingError"}
    others |= {"SendMessage", "InboundMessage", "OutboxMessage"}
    for text in (REFERENCE, CONCEPTS):
        mentioned = set(
            re.findall(r"`([A-Z][A-Za-z]+(?:Error|Event|Record|Message|Reached))`", text)
        )
        assert mentioned - others <= names, mentioned - others - names
