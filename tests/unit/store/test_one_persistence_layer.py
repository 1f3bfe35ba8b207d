"""store/ is the only code that knows how anything is stored, and each shared rule is written
once: checked over the library, the tools and devkit, each check proven on the input it must
refuse."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import lambda_inbox.store
from devkit.paths import REPO_ROOT
from lambda_inbox.store import OPEN_RECORDS_INDEX, InboxRecord

LIBRARY = REPO_ROOT / "layers" / "inbox" / "lambda_inbox"
#: Where the check looks: the library outside store/, the tools, devkit. Left out: devkit's
#: DynamoDB emulator (it reads any expression) and the zoo's consumers (their own tables).
SOURCES = [LIBRARY, REPO_ROOT / "tools" / "lambda_inbox_tools", REPO_ROOT / "devkit"]
EXEMPT = ("lambda_inbox/store/", "devkit/memory_aws/", "devkit/zoo")
#: The request keys that carry an expression or name an index.
EXPRESSION_KEYS = {
    "ConditionExpression",
    "KeyConditionExpression",
    "UpdateExpression",
    "FilterExpression",
    "ProjectionExpression",
    "IndexName",
}
#: A DynamoDB expression written out: an existence check, or the inbox record's status.
EXPRESSION = re.compile(r"attribute_(not_)?exists\(|#status\b")
ATTRIBUTE = re.compile(r"`([a-z_]+)` \(")


def store_only_names() -> set[str]:
    """The attributes only the store has any reason to name: the data model's, less those that
    are also the record's field names (which the command line shows as such) and `pk` (every
    domain table's key too)."""
    documented = set(ATTRIBUTE.findall(lambda_inbox.store.__doc__ or ""))
    return (documented - set(InboxRecord._fields) - {"pk", "expires_at"}) | {OPEN_RECORDS_INDEX}


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of `tree` (what they say is no code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def store_leaks(source: str, names: set[str]) -> list[str]:
    """What `source` says of how things are stored: a stored-only attribute name, a written-out
    expression, or an expression or index key of a request."""
    tree = ast.parse(source)
    skip = docstrings(tree)
    leaks = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if node.value in names or EXPRESSION.search(node.value):
                leaks.append(f"{node.lineno}: {node.value[:40]!r}")
        elif isinstance(node, ast.keyword) and node.arg in EXPRESSION_KEYS:
            leaks.append(f"{node.value.lineno}: {node.arg}=")
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and key.value in EXPRESSION_KEYS:
                    leaks.append(f"{key.lineno}: {key.value!r}:")
    return leaks


def checked_files() -> list[Path]:
    return [
        path
        for folder in SOURCES
        for path in sorted(folder.rglob("*.py"))
        if not any(part in str(path) for part in EXEMPT)
    ]


def test_only_the_store_knows_how_anything_is_stored() -> None:
    names = store_only_names()
    assert {"gsi_open_pk", "reaper_claim", "outbox_body", "next_index"} <= names
    leaks = {
        str(path.relative_to(REPO_ROOT)): found
        for path in checked_files()
        if (found := store_leaks(path.read_text(), names))
    }
    assert leaks == {}


def test_a_stored_name_or_expression_outside_the_store_is_found() -> None:
    source = '''
def claim(client):
    """A docstring may say `attribute_not_exists(pk)`."""
    client.update_item(ConditionExpression="#status = :failed")
    request = {"IndexName": "open-records"}
    return {"gsi_open_pk": "FAILED#01"}
'''
    assert sorted(store_leaks(source, store_only_names())) == [
        "4: '#status = :failed'",
        "4: ConditionExpression=",
        "5: 'IndexName':",
        "5: 'open-records'",
        "6: 'gsi_open_pk'",
    ]


#: Each shared rule's one home: a constant expression that may stand only there.
RULES = {
    "256 * 1024": "layers/inbox/lambda_inbox/_internal/__init__.py",
    "2 ** round_number": "layers/inbox/lambda_inbox/_internal/__init__.py",
}


def rule_copies(source: str) -> list[str]:
    """The size limits (`256 * 1024`) and exponential backoffs (`2 ** n`) in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant):
            text = ast.unparse(node)
            if text == "256 * 1024" or (isinstance(node.op, ast.Pow) and node.left.value == 2):
                found.append(text)
    return found


@pytest.mark.parametrize(("rule", "home"), sorted(RULES.items()))
def test_each_rule_is_written_in_its_one_place(rule: str, home: str) -> None:
    places = [
        str(path.relative_to(REPO_ROOT))
        for folder in SOURCES
        for path in sorted(folder.rglob("*.py"))
        if rule in rule_copies(path.read_text())
    ]
    assert set(places) == {home}


def test_a_second_copy_of_a_rule_is_found() -> None:
    source = "LIMIT = 256 * 1024\n\ndef wait(n):\n    return min(0.05 * 2**n, 1.0)\n"
    assert rule_copies(source) == ["256 * 1024", "2 ** n"]
