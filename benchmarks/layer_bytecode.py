"""What shipping .pyc files in the layer saves at cold start.

Lambda mounts layers read-only under /opt, so Python cannot cache the bytecode it compiles: a
layer without .pyc files is compiled again by every new execution environment. This installs the
layer's lock and the library twice with the 3.13 interpreter (host platform), compiles
one copy like layers/inbox/Makefile does, and times fresh interpreters importing pydantic,
Powertools Logger/Metrics and lambda_inbox and defining a model, with bytecode writing disabled
(as on /opt). boto3 comes precompiled, as in the Lambda runtime. Runs alternate A B B A ...

    .venv/bin/python benchmarks/layer_bytecode.py [--runs 15] [--python PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from devkit.paths import REPO_ROOT

PROBE = """
import time
import boto3
start = time.perf_counter()
import pydantic, aws_lambda_powertools.logging, aws_lambda_powertools.metrics
import lambda_inbox
from pydantic import BaseModel
class Probe(BaseModel):
    x: int
print((time.perf_counter() - start) * 1000)
"""


def python313() -> str:
    try:
        prefix = subprocess.run(
            ["pyenv", "prefix", "3.13.0"], capture_output=True, text=True, check=True
        ).stdout.strip()
        return str(Path(prefix) / "bin" / "python3.13")
    except (OSError, subprocess.CalledProcessError):
        found = shutil.which("python3.13")
        if not found:
            sys.exit("needs Python 3.13 (pyenv 3.13.0 or python3.13 on PATH)")
        return found


def pip_install(python: str, target: Path, *requirements: str, compile_: bool) -> None:
    command = [
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--target",
        str(target),
        *requirements,
    ]
    if not compile_:
        command.insert(4, "--no-compile")
    subprocess.run(command, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--python", default=None)
    args = parser.parse_args()
    python = args.python or python313()
    with tempfile.TemporaryDirectory(prefix="layer-bytecode-") as scratch:
        root = Path(scratch)
        runtime, source, compiled = root / "runtime", root / "source", root / "compiled"
        pip_install(python, runtime, "boto3", compile_=True)
        lock = str(REPO_ROOT / "layers/inbox/requirements.lock")
        pip_install(python, source, "--require-hashes", "-r", lock, compile_=False)
        shutil.copytree(
            REPO_ROOT / "layers/inbox/lambda_inbox",
            source / "lambda_inbox",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        shutil.copytree(source, compiled)
        subprocess.run(
            [
                python,
                "-m",
                "compileall",
                "-q",
                "-j",
                "0",
                "--invalidation-mode",
                "unchecked-hash",
                str(compiled),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        timings: dict[str, list[float]] = {"source only": [], "with .pyc": []}
        order = ["source only", "with .pyc"]
        for run in range(args.runs):
            for name in order if run % 2 == 0 else order[::-1]:
                layer = source if name == "source only" else compiled
                # The layer's own .pyc files or none: no cache prefix elsewhere (`make` sets one).
                env = {
                    **{k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"},
                    "PYTHONDONTWRITEBYTECODE": "1",
                    "AWS_DEFAULT_REGION": "us-east-1",
                    "PYTHONPATH": f"{layer}{os.pathsep}{runtime}",
                }
                out = subprocess.run(
                    [python, "-c", PROBE], env=env, capture_output=True, text=True, check=True
                ).stdout
                timings[name].append(float(out))
    print(
        f"Fresh {Path(python).name} interpreters, {args.runs} per variant, interleaved; medians.\n"
    )
    print("| layer | import ms (median) | min | max |")
    print("|---|---:|---:|---:|")
    for name, values in timings.items():
        print(
            f"| {name} | {statistics.median(values):.0f} | {min(values):.0f} | {max(values):.0f} |"
        )
    ratio = statistics.median(timings["source only"]) / statistics.median(timings["with .pyc"])
    print(f"\nsource only / with .pyc: {ratio:.1f}x")


if __name__ == "__main__":
    main()
