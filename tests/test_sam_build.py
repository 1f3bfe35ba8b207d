"""`sam build` produces a deployable application: the layer holds the library, its dependencies
for arm64 / CPython 3.13 (the versions its lock pins), and compiled bytecode for every module
(the layer is read-only in Lambda, so missing .pyc files would be compiled again on every cold
start); the layer of the managed-Powertools choice holds the library alone."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

import pytest

from devkit.locks import INBOX, KAFKA_CODECS, LayerLock, pins
from devkit.paths import REPO_ROOT

pytestmark = pytest.mark.build

BUILD = REPO_ROOT / ".aws-sam" / "build"
ELF_MACHINE_AARCH64 = 183


@pytest.fixture(scope="module")
def layer() -> Path:
    """`make build`, once per test run: under pytest-xdist the first worker builds while the
    other waits on the lock, then finds the run's mark and uses that build."""
    BUILD.parent.mkdir(exist_ok=True)
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", f"pid-{os.getpid()}")
    built = BUILD.parent / f".built-by-{run}"
    with (BUILD.parent / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built.exists():
            for stale in BUILD.parent.glob(".built-by-*"):
                stale.unlink()
            done = subprocess.run(
                ["make", "-s", "build"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=900
            )
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            built.touch()
    return BUILD / "InboxLayer" / "python"


def test_the_layer_ships_the_library_and_its_dependencies(layer: Path) -> None:
    for package in (
        "lambda_inbox",
        "pydantic",
        "pydantic_core",
        "aws_lambda_powertools",
        "jmespath",
    ):
        assert (layer / package / "__init__.py").is_file(), package
    assert (layer / "lambda_inbox" / "py.typed").is_file()
    assert not (layer / "devkit").exists()  # the development helpers stay out of the layer


@pytest.mark.parametrize("lock", [INBOX, KAFKA_CODECS], ids=["InboxLayer", "KafkaCodecsLayer"])
def test_each_layer_holds_exactly_the_versions_its_lock_pins(layer: Path, lock: LayerLock) -> None:
    built = BUILD / lock.layer / "python"
    installed = {
        path.name.removesuffix(".dist-info").rsplit("-", 1)[0].replace("_", "-").lower(): (
            path.name.removesuffix(".dist-info").rsplit("-", 1)[1]
        )
        for path in built.glob("*.dist-info")
    }
    assert installed == pins(lock.path.read_text())


def test_the_library_layer_holds_lambda_inbox_alone_in_a_megabyte_and_a_half(layer: Path) -> None:
    """InboxLibraryLayer, the layer of PowertoolsLayer=managed: the library and its bytecode,
    nothing else (Powertools and pydantic come from AWS's layer), under 1.5 MB unpacked (1.12
    MB with CreatesItem and the Powertools bridge: docs/PERFORMANCE.md, "The Lambda layers")."""
    alone = BUILD / "InboxLibraryLayer" / "python"
    assert sorted(p.name for p in alone.iterdir()) == ["lambda_inbox"]
    files = [p for p in alone.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 1_500_000
    sources = [p for p in files if p.suffix == ".py"]
    assert sources
    for source in sources:
        assert (source.parent / "__pycache__" / f"{source.stem}.cpython-313.pyc").is_file()


def test_the_layer_is_the_library_folder_as_it_is(layer: Path) -> None:
    """The layer ships layers/inbox/lambda_inbox unchanged (no stripping step), and none of the
    operator's tooling (lambda_inbox_tools, Typer, Rich, moto) or devkit."""
    source = REPO_ROOT / "layers" / "inbox" / "lambda_inbox"
    shipped = {
        p.relative_to(layer / "lambda_inbox") for p in (layer / "lambda_inbox").rglob("*.py")
    }
    assert shipped == {p.relative_to(source) for p in source.rglob("*.py")}
    for package in ("lambda_inbox_tools", "devkit", "typer", "rich", "moto", "yaml"):
        assert not (layer / package).exists(), package


def test_every_module_of_the_layer_is_precompiled_for_python_3_13(layer: Path) -> None:
    sources = list(layer.rglob("*.py"))
    assert len(sources) > 100
    missing = [
        source
        for source in sources
        if not (source.parent / "__pycache__" / f"{source.stem}.cpython-313.pyc").is_file()
    ]
    assert missing == []


def test_native_extensions_are_built_for_arm64(layer: Path) -> None:
    (extension,) = (layer / "pydantic_core").glob("_pydantic_core*.so")
    header = extension.read_bytes()[:20]
    assert header[:4] == b"\x7fELF"
    assert int.from_bytes(header[18:20], "little") == ELF_MACHINE_AARCH64


@pytest.mark.parametrize("function", ["OrderEventsFunction", "PaymentEventsFunction"])
def test_functions_are_built_with_their_handler(layer: Path, function: str) -> None:
    assert (BUILD / function / "app.py").is_file()
    template = (BUILD / "template.yaml").read_text()
    assert f"{function}:" in template


def test_the_kafka_codecs_are_a_layer_of_their_own_for_payment_events(layer: Path) -> None:
    """Avro and Protobuf ship in KafkaCodecsLayer (arm64, precompiled), not in InboxLayer, and
    only PaymentEventsFunction has it; its schemas are built with it."""
    codecs = BUILD / "KafkaCodecsLayer" / "python"
    assert (codecs / "avro" / "__init__.py").is_file()
    (upb,) = (codecs / "google" / "_upb").glob("_message*.so")
    assert int.from_bytes(upb.read_bytes()[18:20], "little") == ELF_MACHINE_AARCH64
    assert (codecs / "avro" / "__pycache__").is_dir()
    for package in ("avro", "google"):
        assert not (layer / package).exists(), package
    template = (BUILD / "template.yaml").read_text()
    assert template.count("KafkaCodecsLayer") >= 2  # the resource and the one function using it
    schemas = BUILD / "PaymentEventsFunction" / "schemas"
    for name in ("payment_captured.avsc", "payment_captured.proto", "payment_captured_pb2.py"):
        assert (schemas / name).is_file(), name
