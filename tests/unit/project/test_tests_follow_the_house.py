"""tests/unit follows the library's shape (DEVELOPERS.md, "Tests"): every module sits in a folder,
one per stage of the processing model or one of the declared others, and a test reaches past the
public names only where its folder says it may: a stage's folder into that stage (and the shared
internals: `_internal`, `_errors`, `_messages`), `consumer/` (the pipeline that assembles every
stage) into any of them; the integration tests and the suite's own helpers import public names
only (what they need of the internals, such as a lease whose worker died, devkit gives them). A
redesign of a stage then rewrites its own folder and nothing else.
Each check is proven on the input it must refuse."""

from __future__ import annotations

from devkit.doc_snippets import private_imports, public_names
from devkit.paths import REPO_ROOT

TESTS = REPO_ROOT / "tests"
UNIT = TESTS / "unit"
LIBRARY = REPO_ROOT / "layers" / "inbox" / "lambda_inbox"
#: A stage's folder and the private modules of its own stage.
STAGES = {
    "commit": "lambda_inbox._commit",
    "dead_letter": "lambda_inbox._dead_letter",
    "decoding": "lambda_inbox._decoding",
    "outbox": "lambda_inbox._outbox",
    "powertools": "lambda_inbox._powertools",
    "sources": "lambda_inbox._sources",
    "store": "lambda_inbox.store",
    "telemetry": "lambda_inbox._telemetry",
}
SHARED = ("lambda_inbox._internal", "lambda_inbox._errors", "lambda_inbox._messages")
#: Folders that are not a stage: the assembly, the reference model, the example application,
#: the project's own rules, the docs and the tools. Only `consumer` may reach into the library.
OTHERS = {"consumer", "fates", "app", "project", "docs", "tools"}
#: A module that reads a private one on purpose, and why.
READS_PRIVATE = {
    # The error reference must document the exceptions a user never imports, too.
    "docs/test_error_reference.py": ("lambda_inbox._errors",),
}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def stray_imports(folder: str, source: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """The imports of a test in `folder` that reach past what the folder may import."""
    names = public_names()
    names["lambda_inbox"] = names["lambda_inbox"] | {"__version__"}
    if folder == "consumer":
        return []
    if folder in STAGES:
        allowed = (*allowed, STAGES[folder], *SHARED)
    found = []
    for imported in private_imports(source, names):
        words = imported.split()
        module = words[1] if words[1] != "lambda_inbox" else f"lambda_inbox.{words[3]}"
        if not any(_within(module, package) for package in allowed):
            found.append(imported)
    return found


def test_every_unit_test_sits_in_a_stage_folder_or_a_declared_one() -> None:
    folders = {path.relative_to(UNIT).parts[0] for path in UNIT.rglob("test_*.py")}
    assert folders <= set(STAGES) | OTHERS, folders - set(STAGES) - OTHERS
    assert not list(UNIT.glob("test_*.py"))


def test_every_stage_folder_is_a_stage_of_the_library() -> None:
    for folder, package in STAGES.items():
        assert (REPO_ROOT / "layers" / "inbox" / package.replace(".", "/")).is_dir(), folder


def test_the_tests_reach_past_public_names_only_where_their_folder_may() -> None:
    found = {}
    for path in sorted(UNIT.rglob("*.py")):
        relative = path.relative_to(UNIT).as_posix()
        if "/" not in relative:
            continue
        allowed = READS_PRIVATE.get(relative, ())
        if imports := stray_imports(relative.split("/")[0], path.read_text(), allowed):
            found[relative] = imports
    assert found == {}


def test_the_other_tests_import_public_names_only() -> None:
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        if UNIT in path.parents:
            continue
        if imports := stray_imports("integration", path.read_text()):
            found[path.relative_to(TESTS).as_posix()] = imports
    assert found == {}


def test_a_stray_import_is_found() -> None:
    reach = "from lambda_inbox._commit.send import CommitStatus\n"
    assert stray_imports("commit", reach) == []
    assert stray_imports("consumer", reach) == []
    assert stray_imports("sources", reach) == ["from lambda_inbox._commit.send import CommitStatus"]
    assert stray_imports("app", "from lambda_inbox import _errors\n") != []
    assert stray_imports("sources", "from lambda_inbox import _errors\n") == []
    assert stray_imports("store", "from lambda_inbox.store._inbox import InboxStore\n") == []
    assert stray_imports("docs", "from lambda_inbox import InboxConsumer\n") == []
    leases = "def f():\n    from lambda_inbox.store._leases import LeaseWrites\n"
    assert stray_imports("integration", leases) != []
