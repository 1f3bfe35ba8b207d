"""The shape of the library (docs/architecture.md, "The library's shape"): folders of at most 12
modules, no import circle between its folders and root modules (`TYPE_CHECKING` imports
included), one writer of a batch's report (the pipeline), a constructor of at most nine parameters, the number size rule written once, and user
code (functions/, examples/, starter/; the docs' snippets in test_doc_snippets.py) importing
public names only. Each check is proven on the broken input it must refuse."""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

import lambda_inbox
from devkit.doc_snippets import private_imports, public_names
from devkit.paths import REPO_ROOT

LIBRARY = REPO_ROOT / "layers" / "inbox" / "lambda_inbox"
MAX_MODULES = 12
MAX_PARAMETERS = 9


# ---- the checks ----------------------------------------------------------------------------


def crowded_folders(library: Path) -> dict[str, int]:
    """Folders holding more than `MAX_MODULES` modules."""
    counts = {
        str(folder.relative_to(library.parent)): len(list(folder.glob("*.py")))
        for folder in [library, *library.rglob("*/")]
        if folder.name != "__pycache__"
    }
    return {folder: n for folder, n in counts.items() if n > MAX_MODULES}


def room_of(module: str) -> str:
    """The room a library module belongs to: its top-level subpackage, or itself at the root."""
    parts = module.split(".")
    return ".".join(parts[:2])


def room_graph(library: Path) -> dict[str, set[str]]:
    """Room -> the rooms it imports, from every import statement (functions and
    `TYPE_CHECKING` blocks included)."""
    graph: dict[str, set[str]] = {}
    for path in library.rglob("*.py"):
        parts = path.relative_to(library.parent).with_suffix("").parts
        module = ".".join(parts).removesuffix(".__init__")
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        source = room_of(module)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
            elif isinstance(node, ast.Import):
                target = node.names[0].name
            else:
                continue
            if target.startswith("lambda_inbox.") and room_of(target) != source:
                graph.setdefault(source, set()).add(room_of(target))
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every import circle of `graph`, each once (as found from its first room)."""
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def walk(room: str, path: list[str]) -> None:
        for target in sorted(graph.get(room, ())):
            if target in path:
                circle = path[path.index(target) :]
                if frozenset(circle) not in seen:
                    seen.add(frozenset(circle))
                    found.append(circle)
            elif len(path) < len(graph) + 1:
                walk(target, [*path, target])

    for room in sorted(graph):
        walk(room, [room])
    return found


#: The only module that writes a batch's report; the stages return their results to it.
REPORT_WRITER = "_pipeline.py"


def report_writers(library: Path) -> list[str]:
    """Modules besides `report.py` that import `BatchReport`, the writable report (a stage
    reads the batch through `BatchView`, which has no `record`)."""
    writers = []
    for path in sorted(library.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and any(
                alias.name == "BatchReport" for alias in node.names
            ):
                writers.append(str(path.relative_to(library)))
    return sorted(set(writers))


def parameters(function: object) -> list[str]:
    return [p for p in inspect.signature(function).parameters if p != "self"]  # type: ignore[arg-type]


def number_rules(library: Path) -> list[str]:
    """Places that compute a size from a count of digits: `... // 2` inside a function whose
    name speaks of a size."""
    places = []
    for path in sorted(library.rglob("*.py")):
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, ast.FunctionDef) or "size" not in function.name:
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.BinOp)
                    and isinstance(node.op, ast.FloorDiv)
                    and isinstance(node.right, ast.Constant)
                    and node.right.value == 2
                ):
                    places.append(f"{path.relative_to(library)}:{node.lineno}")
    return places


def user_sources() -> dict[str, str]:
    """Every Python source of user code (the README's and the docs' snippets are checked as they
    run, by tests/unit/docs/test_doc_snippets.py)."""
    sources: dict[str, str] = {}
    for folder in ("functions", "examples", "starter"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            sources[str(path.relative_to(REPO_ROOT))] = path.read_text()
    return sources


# ---- the library holds them ----------------------------------------------------------------


def test_no_folder_of_the_library_holds_more_than_twelve_modules() -> None:
    assert crowded_folders(LIBRARY) == {}


def test_no_folder_of_the_testing_kit_holds_more_than_twelve_modules() -> None:
    """The kit users import (`lambda_inbox_tools.testing`), its check's workings in `check/`."""
    assert crowded_folders(REPO_ROOT / "tools" / "lambda_inbox_tools" / "testing") == {}


def test_the_library_s_folders_import_each_other_in_no_circle() -> None:
    graph = room_graph(LIBRARY)
    assert "lambda_inbox._commit" in graph  # the graph was read
    assert circles(graph) == []


def test_only_the_pipeline_writes_a_batch_s_report() -> None:
    assert report_writers(LIBRARY) == [REPORT_WRITER]


def test_the_consumer_takes_at_most_nine_parameters() -> None:
    assert len(parameters(lambda_inbox.InboxConsumer.__init__)) <= MAX_PARAMETERS


def test_the_number_size_rule_is_written_once() -> None:
    rules = [
        place
        for folder in (LIBRARY, REPO_ROOT / "tools" / "lambda_inbox_tools", REPO_ROOT / "devkit")
        for place in number_rules(folder)
    ]
    assert len(rules) == 1, rules


@pytest.mark.parametrize("name", sorted(user_sources()))
def test_user_code_imports_public_names_only(name: str) -> None:
    assert private_imports(user_sources()[name], public_names()) == []


def test_every_public_name_can_be_imported() -> None:
    for package, names in public_names().items():
        module = importlib.import_module(package)
        assert all(getattr(module, name, None) is not None for name in names), package


# ---- each check refuses what it must -------------------------------------------------------


def test_a_crowded_folder_is_found(tmp_path: Path) -> None:
    library = tmp_path / "lambda_inbox"
    (library / "stage").mkdir(parents=True)
    for n in range(MAX_MODULES + 1):
        (library / "stage" / f"m{n}.py").write_text("")
    assert crowded_folders(library) == {"lambda_inbox/stage": MAX_MODULES + 1}


def test_an_import_circle_between_folders_is_found(tmp_path: Path) -> None:
    library = tmp_path / "lambda_inbox"
    for folder in ("a", "b"):
        (library / folder).mkdir(parents=True)
        (library / folder / "__init__.py").write_text("")
    (library / "a" / "one.py").write_text("from lambda_inbox.b.two import x\n")
    (library / "b" / "two.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a.one import y\n"
    )
    assert circles(room_graph(library)) == [["lambda_inbox.a", "lambda_inbox.b"]]


def test_a_stage_that_writes_the_report_is_found(tmp_path: Path) -> None:
    library = tmp_path / "lambda_inbox"
    (library / "commit").mkdir(parents=True)
    (library / "pipeline.py").write_text("from lambda_inbox._report import BatchReport\n")
    (library / "commit" / "committer.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from lambda_inbox._report import BatchReport, BatchView\n"
    )
    (library / "triage.py").write_text("from lambda_inbox._report import BatchView\n")
    assert report_writers(library) == ["commit/committer.py", "pipeline.py"]


def test_a_tenth_parameter_is_counted() -> None:
    def wide(self: object, a: int, *, b: int, c: int, d: int, e: int, f: int, g: int) -> None: ...

    def wider(self: object, a: int, *, b: int, c: int, d: int, e: int, f: int, g: int, h: int,
              i: int, j: int) -> None: ...  # fmt: skip

    assert len(parameters(wide)) == 7 and len(parameters(wider)) == 10


def test_a_second_number_rule_is_found(tmp_path: Path) -> None:
    library = tmp_path / "lambda_inbox"
    library.mkdir()
    (library / "a.py").write_text("def size(t):\n    return len(t) // 2 + 2\n")
    (library / "b.py").write_text("def value_size(t):\n    return 3 + len(t) // 2\n")
    (library / "c.py").write_text("def half(t):\n    return len(t) // 2\n")  # no size: not one
    assert number_rules(library) == ["a.py:2", "b.py:2"]


@pytest.mark.parametrize(
    "source",
    [
        "from lambda_inbox._commit.unit_of_work import UnitOfWork",
        "from lambda_inbox import Pipeline",
        "import lambda_inbox._commit",
        "from lambda_inbox.reaper import Reaper, sweep",
        "from lambda_inbox.store._inbox import InboxStore",
    ],
)
def test_a_private_import_is_found(source: str) -> None:
    assert private_imports(source, public_names()) != []


def test_public_imports_pass() -> None:
    source = (
        "import lambda_inbox\nfrom lambda_inbox import InboxConsumer, Decide\n"
        "from lambda_inbox.reaper import handler\nfrom lambda_inbox_tools.testing import sqs_event\n"
    )
    assert private_imports(source, public_names()) == []
