"""The two choices of template.yaml's PowertoolsLayer side by side: each layer's size, and the
instructions a fresh Python 3.13 interpreter spends importing the library and the order_events
handler from them.

    .venv/bin/python benchmarks/powertools_layer.py          # builds the layers in a scratch folder

- bundled: InboxLayer, built by `layers/inbox/Makefile` (the lock, the library, bytecode);
- managed: InboxLibraryLayer (the library and its bytecode) behind a stand-in for AWS's managed
  AWSLambdaPowertoolsPythonV3 layer, made the way Powertools' layer recipe makes it
  (aws-lambda-powertools[all] at the version InboxLayer's lock pins, the runtime's packages
  removed: boto3, botocore, s3transfer, dateutil, urllib3, six, jmespath; bytecode compiled).
  AWS's own layer is fetched by its ARN with AWS credentials; the stand-in needs none.

Both are built for this machine (manylinux2014_x86_64), as `make sam-local` builds them, with
the 3.13 interpreter `make build` uses. The runtime's boto3 and jmespath sit in a folder after
the layers, as Lambda puts its runtime's packages after /opt/python. Every program runs under
`python -S` (nothing of the interpreter's own site-packages) with the function's folder, the
layer folders and the runtime folder on `sys.path`, once unmeasured (the layers ship their
bytecode; this writes the runtime folder's) and once under callgrind.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from devkit.callgrind import count_instructions, require_valgrind
from devkit.layer_size import layer_size
from devkit.locks import INBOX, pins
from devkit.paths import FUNCTIONS_DIR, REPO_ROOT

cold_start: Any = importlib.import_module("cold_start")  # its environment (benchmarks/ on the path)

PLATFORM = "manylinux2014_x86_64"
#: What Powertools' layer recipe deletes: the Lambda runtime has them.
RUNTIME_PACKAGES = (
    "boto",
    "s3transfer",
    "dateutil",
    "python_dateutil",
    "urllib3",
    "six",
    "jmespath",
)
PROGRAMS = {
    "import lambda_inbox": "import lambda_inbox",
    # The consumer makes its DynamoDB client on first use; cold_start.py's "inbox" program.
    "order_events handler": "import app\napp.consumer.dynamodb.meta",
}


def python313() -> str:
    found = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts/find-python313.sh")],
        capture_output=True,
        text=True,
        check=True,
    )
    return str(Path(found.stdout.strip()) / "python3.13")


def pip(python: str, target: Path, *requirements: str, platform: bool = True) -> None:
    command = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if platform:
        command += ["--platform", PLATFORM, "--implementation", "cp", "--python-version", "3.13"]
        command += ["--only-binary=:all:"]
    subprocess.run([*command, "--target", str(target), *requirements], check=True)


def compile_all(python: str, folder: Path) -> None:
    command = [python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode"]
    subprocess.run([*command, "unchecked-hash", str(folder)], check=True, stdout=subprocess.DEVNULL)


def build_layer(python: str, target: str, artifacts: Path) -> Path:
    """A layer built by layers/inbox/Makefile's `target`, for this machine's platform."""
    env = {k: v for k, v in os.environ.items() if k != "MAKEFLAGS"}
    variables = [f"ARTIFACTS_DIR={artifacts}", f"PLATFORM={PLATFORM}", f"PYTHON={python}"]
    subprocess.run(
        ["make", "-s", "-C", str(REPO_ROOT / "layers/inbox"), target, *variables],
        env=env,
        check=True,
    )
    return artifacts / "python"


def managed_powertools(python: str, folder: Path) -> Path:
    """The stand-in for AWS's managed Powertools layer (see the module's docstring)."""
    target = folder / "python"
    version = pins(INBOX.path.read_text())["aws-lambda-powertools"]
    pip(python, target, f"aws-lambda-powertools[all]=={version}")
    for path in list(target.iterdir()):
        if path.name.startswith(RUNTIME_PACKAGES):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    compile_all(python, target)
    return target


def instructions(python: str, folders: list[Path], body: str) -> int:
    path = [str(FUNCTIONS_DIR / "order_events"), *map(str, folders)]
    program = f"import sys\nsys.path[:0] = {path!r}\n{body}"
    env = {**cold_start.child_env(), "PYTHONHASHSEED": "0"}
    subprocess.run([python, "-S", "-c", program], env=env, cwd="/", check=True)
    return count_instructions([python, "-S", "-c", program], env=env, cwd="/")


def main() -> None:
    require_valgrind()
    python = python313()
    with tempfile.TemporaryDirectory(prefix="powertools-layer-") as scratch:
        root = Path(scratch)
        bundled = build_layer(python, "build-InboxLayer", root / "InboxLayer")
        library = build_layer(python, "build-InboxLibraryLayer", root / "InboxLibraryLayer")
        powertools = managed_powertools(python, root / "ManagedPowertools")
        runtime = root / "runtime"
        pip(python, runtime, "boto3", platform=False)
        compile_all(python, runtime)
        print("Layer sizes (files unpacked, and deflate-zipped as uploaded):")
        print()
        print("| layer | unpacked (MB) | zipped (MB) |")
        print("|---|---:|---:|")
        for name, folder in (
            ("InboxLayer (bundled: the library, Powertools, pydantic, jmespath)", bundled),
            ("InboxLibraryLayer (managed: the library alone)", library),
            ("AWS's managed Powertools layer (stand-in, [all])", powertools),
        ):
            unpacked, zipped = layer_size(folder)
            print(f"| {name} | {unpacked / 1e6:.2f} | {zipped / 1e6:.2f} |")
        variants = {"bundled": [bundled, runtime], "managed": [powertools, library, runtime]}
        print()
        print("Instructions of one fresh Python 3.13 interpreter (callgrind), millions:")
        print()
        print("| program | bundled | managed | managed - bundled |")
        print("|---|---:|---:|---:|")
        for name, body in PROGRAMS.items():
            counts = {
                v: instructions(python, folders, body) / 1e6 for v, folders in variants.items()
            }
            print(
                f"| {name} | {counts['bundled']:.1f} | {counts['managed']:.1f} "
                f"| {counts['managed'] - counts['bundled']:+.1f} |"
            )


if __name__ == "__main__":
    main()
