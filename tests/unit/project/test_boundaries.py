"""The package boundaries of docs/architecture.md: the library loads none of the tooling, devkit
is imported by nothing shipped, and no module imports itself back through others (imports inside
functions included). Fast: one interpreter and a parse of the sources, no build."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from devkit.paths import REPO_ROOT

ROOT = REPO_ROOT
PACKAGES = {
    "lambda_inbox": ROOT / "layers" / "inbox" / "lambda_inbox",
    "lambda_inbox_tools": ROOT / "tools" / "lambda_inbox_tools",
    "devkit": ROOT / "devkit",
}
#: Top-level modules `import lambda_inbox` must never load.
#: What git ignores (bytecode, an editable install's metadata).
IGNORED = ("__pycache__", ".egg-info")
TOOLING = ("lambda_inbox_tools", "devkit", "typer", "rich", "moto", "yaml", "confluent_kafka")


def loaded_by(statement: str, *, tools: bool = False) -> list[str]:
    """The modules a fresh interpreter has loaded after `statement`, with only the library on
    the path (as in the layer), and the tooling too when `tools`."""
    code = f"import sys; {statement}; import json; print(json.dumps(sorted(sys.modules)))"
    path = [str(PACKAGES["lambda_inbox"].parent), _site_packages()]
    if tools:
        path.insert(1, str(PACKAGES["lambda_inbox_tools"].parent))
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={"PYTHONPATH": ":".join(path)},
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(done.stdout))


def _site_packages() -> str:
    import pydantic

    return str(Path(pydantic.__file__).parents[1])


def test_import_lambda_inbox_loads_none_of_the_tooling() -> None:
    modules = loaded_by("import lambda_inbox")
    assert "lambda_inbox" in modules
    leaked = [m for m in modules if m.partition(".")[0] in TOOLING]
    assert leaked == []
    # Nothing in the library may even look like the command line (lambda_inbox.cli*).
    assert [m for m in modules if m.startswith(("lambda_inbox.cli", "lambda_inbox.local"))] == []


#: What only the `local` extra installs (tools/pyproject.toml), and the local stack that needs it.
LOCAL_EXTRA = ("yaml", "moto", "confluent_kafka")


@pytest.mark.parametrize(
    "statement",
    [
        "import lambda_inbox_tools.cli.app",  # every command, `replay` and `redrive` included
        "import lambda_inbox_tools.replay.run, lambda_inbox_tools.replay.kinesis",
    ],
)
def test_the_command_line_needs_only_the_cli_extra(statement: str) -> None:
    """`pip install 'lambda-inbox[cli]'` is enough for the command line: it loads nothing of
    the `local` extra, nor the local stack, until `lambda-inbox local` runs."""
    modules = loaded_by(statement, tools=True)
    leaked = [m for m in modules if m.partition(".")[0] in LOCAL_EXTRA]
    leaked += [m for m in modules if m.startswith("lambda_inbox_tools.local")]
    assert leaked == []


#: What a transactional consumer loads only when it first needs it (docs/architecture.md).
ON_FIRST_USE = (
    "lambda_inbox._sources.kafka",  # the first Kafka event
    "lambda_inbox._sources.values",  # the first Avro or Protobuf value
    "lambda_inbox._sources.streams",  # the first Kinesis or DynamoDB Streams event
    "lambda_inbox._sources.fields",  # the first Kafka or stream event
    "lambda_inbox._leases.leased",  # leased mode
    "lambda_inbox.store._leases",
    "lambda_inbox.store._reaper_claims",
    "lambda_inbox.store._open_index",  # the reaper's and the command line's index reads
    "lambda_inbox.reaper",
    "lambda_inbox.store._outbox_item",  # the first outbox request
    "lambda_inbox._outbox.relay",
    "lambda_inbox._outbox.sending",
    "lambda_inbox._outbox.destinations",
    "lambda_inbox._dead_letter.envelope",  # the first dead letter
    "boto3.dynamodb.types",  # a value the unit of work's own serializer does not take
    "lambda_inbox._commit.creates",  # a CreatesItem consumer
    "lambda_inbox.store._created_item",
)
#: What `import lambda_inbox` leaves to `InboxConsumer`: the consumer and the stages it assembles
#: (the reaper, the relay, the command line and a test of a handler's writes never load them).
#: A module added to `import lambda_inbox` is measured first: `benchmarks/cold_start.py
#: --instructions` (at most 25 M instructions).
CONSUMER_ONLY = (
    "lambda_inbox._consumer",
    "lambda_inbox._pipeline",
    "lambda_inbox._commit.committer",
    "lambda_inbox._commit.decision",
    "lambda_inbox._commit.send",
    "lambda_inbox._triage",
    "lambda_inbox._internal.deadline",
    "lambda_inbox._telemetry",
    "lambda_inbox._internal.aws_clients",
    "lambda_inbox._dead_letter.queue",
    "lambda_inbox._sources.sqs",
    "lambda_inbox._report",
    "lambda_inbox._options",  # the checks of the callables it is given, and its parameter groups
)


def test_import_lambda_inbox_leaves_the_consumer_to_its_first_use() -> None:
    # A consumer loads each of them (the next test): the list names real modules.
    assert sorted(set(loaded_by("import lambda_inbox")).intersection(CONSUMER_ONLY)) == []


def test_a_transactional_consumer_loads_its_optional_parts_on_first_use() -> None:
    consumer = (
        "import os; os.environ['AWS_DEFAULT_REGION'] = 'us-east-1'; "
        "import lambda_inbox; lambda_inbox.InboxConsumer('c', model=dict, decide=print, "
        "config=lambda_inbox.InboxConfig('c', 'inbox'), key='event_id')"
    )
    loaded = set(loaded_by(consumer))
    assert sorted(set(CONSUMER_ONLY) - loaded) == []
    assert sorted(loaded.intersection(ON_FIRST_USE)) == []


def test_library_named_tuples_have_evaluated_annotations() -> None:
    """`typing.NamedTuple` compiles every string annotation into a ForwardRef when the class is
    made: under `from __future__ import annotations` that cost ~3 M instructions of the import
    (docs/PERFORMANCE.md, cold start). Modules that define one evaluate their annotations."""
    stringified = []
    for path in sorted(PACKAGES["lambda_inbox"].rglob("*.py")):
        tree = ast.parse(path.read_text())
        defines = any(
            isinstance(node, ast.ClassDef)
            and any(isinstance(b, ast.Name) and b.id == "NamedTuple" for b in node.bases)
            for node in tree.body
        )
        future = any(
            isinstance(node, ast.ImportFrom)
            and node.module == "__future__"
            and any(alias.name == "annotations" for alias in node.names)
            for node in tree.body
        )
        if defines and future:
            stringified.append(path.name)
    assert stringified == []


@pytest.mark.parametrize(
    "statement",
    [
        "from lambda_inbox import LeasePolicy",
        "import lambda_inbox.reaper",
        "import lambda_inbox.store._leases, lambda_inbox.store._reaper_claims, "
        "lambda_inbox.store._open_index",
    ],
)
def test_no_library_module_loads_the_tooling(statement: str) -> None:
    leaked = [m for m in loaded_by(statement) if m.partition(".")[0] in TOOLING]
    assert leaked == []


def test_the_layer_folder_holds_the_library_only() -> None:
    library = PACKAGES["lambda_inbox"]
    folders = sorted(p.name for p in library.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == [
        "_commit",
        "_dead_letter",
        "_decoding",
        "_internal",
        "_leases",
        "_outbox",
        "_powertools",
        "_sources",
        "_telemetry",
        "reaper",
        "store",
    ]
    assert sorted(p.name for p in library.parent.iterdir() if not p.name.endswith(IGNORED)) == [
        "Makefile",
        "lambda_inbox",
        "requirements.lock",
    ]


def module_imports() -> dict[str, set[str]]:
    """Every module of the three packages -> the modules of the three packages it imports,
    anywhere in its source (functions included, `TYPE_CHECKING` blocks excluded)."""
    modules: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            name = ".".join((package, *parts))
            modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        graph[name] = {
            target
            for imported in _imports(ast.parse(path.read_text()), name, is_package)
            if (target := _known(imported, modules)) is not None and target != name
        }
    return graph


def _imports(tree: ast.Module, module: str, is_package: bool) -> list[str]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    found: list[str] = []
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = base[: len(base) - node.level + 1] if node.level else []
            parent = ".".join([*prefix, *([node.module] if node.module else [])])
            if node.module:  # `from . import x` imports the submodule x, not its package
                found.append(parent)
            found.extend(f"{parent}.{alias.name}" for alias in node.names)
    return found


def _known(imported: str, modules: dict[str, Path]) -> str | None:
    while imported and imported not in modules:
        imported = imported.rpartition(".")[0]
    return imported or None


def test_no_import_circles() -> None:
    graph = module_imports()
    circles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        for target in sorted(graph[node]):
            if target in path:
                circles.append([*path[path.index(target) :], target])
            elif target not in done:
                visit(target, [*path, target])
        done.add(node)

    done: set[str] = set()
    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    assert circles == []


def test_nothing_shipped_imports_devkit() -> None:
    graph = module_imports()
    shipped = [m for m in graph if not m.startswith("devkit")]
    assert [m for m in shipped if any(t.startswith("devkit") for t in graph[m])] == []
    library = [m for m in graph if m.startswith("lambda_inbox.") or m == "lambda_inbox"]
    assert [m for m in library if any(t.startswith("lambda_inbox_tools") for t in graph[m])] == []


def test_examples_use_only_the_public_api_and_the_testing_kit() -> None:
    """An example is what an adopting team writes: `lambda_inbox` and the kit, nothing of
    this repository's own helpers or the library's internals."""
    allowed = ("lambda_inbox", "lambda_inbox_tools.testing")
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "examples").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                ours = name.split(".")[0] in (
                    "lambda_inbox",
                    "lambda_inbox_tools",
                    "devkit",
                    "tests",
                )
                if ours and name not in allowed:
                    found.setdefault(str(path.relative_to(ROOT)), []).append(name)
    assert found == {}
