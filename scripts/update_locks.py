"""`make locks`: the Lambda layers' locks made again from pyproject.toml, then proven installable.

Each lock (devkit.locks.LOCKS) is resolved by `uv pip compile` for Lambda's platform (manylinux2014
aarch64, CPython 3.12: every version it picks must serve python3.12 and python3.13) against the
package index as it was at one moment (`--as-of`, default now; written in the lock, so the same
command with that moment gives the same lock), with the hashes of every file of each pinned
version. A lock that builds on another (KafkaCodecsLayer on InboxLayer) is resolved with that
lock's versions as constraints and leaves its packages out. Then every lock is downloaded with
`pip download --require-hashes` for both architectures and both Pythons: a wheel missing for one
of them, or a hash that does not match, fails here rather than in `sam build`. template.yaml's
ManagedPowertoolsVersion follows the Powertools InboxLayer's lock pins.

Usage: .venv/bin/python scripts/update_locks.py [--as-of 2026-12-01T00:00:00Z] [--no-verify]
Needs the package index (PyPI); `make check` reads the locks without it (tests/unit/project/test_layer_locks.py).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from devkit.locks import INBOX, LOCKS, PLATFORMS, PYTHON_VERSIONS, LayerLock, pins, pyproject_inputs
from devkit.paths import REPO_ROOT

UV = Path(sys.executable).parent / "uv"
HEADER = """\
# {layer}: every package `pip install --require-hashes` puts into the layer, pinned with the
# hashes of all its files (manylinux2014 aarch64 and x86_64; CPython 3.12 and 3.13). Made by
# `make locks` from pyproject.toml{what}; never edit it by hand.
# resolved: {as_of} (`make locks LOCKS_AS_OF={as_of}` makes this file again)
{inputs}{builds_on}"""


def compile_lock(lock: LayerLock, as_of: str, constraints: Path | None) -> str:
    command = [
        str(UV),
        "pip",
        "compile",
        "pyproject.toml",
        "--quiet",
        "--no-header",
        "--generate-hashes",
        "--python-platform",
        "aarch64-manylinux2014",
        "--python-version",
        min(PYTHON_VERSIONS),
        "--exclude-newer",
        as_of,
    ]
    if lock.extra is not None:
        command += ["--extra", lock.extra]
    if constraints is not None:
        command += ["--constraint", str(constraints)]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{lock.layer}: uv pip compile failed:\n{done.stderr}")
    return done.stdout


def without(compiled: str, names: set[str]) -> str:
    """`compiled` (uv's output) without the entries of `names` (each entry: its pin line and the
    indented lines after it)."""
    kept: list[str] = []
    keep = True
    for line in compiled.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            keep = next(iter(pins(line)), None) not in names
        if keep:
            kept.append(line)
    return "\n".join(kept) + "\n"


def write_lock(lock: LayerLock, as_of: str, scratch: Path) -> None:
    constraints = None
    if lock.builds_on is not None:
        constraints = scratch / f"{lock.builds_on.layer}.constraints"
        below = pins(lock.builds_on.path.read_text())
        constraints.write_text("".join(f"{name}=={v}\n" for name, v in below.items()))
    body = compile_lock(lock, as_of, constraints)
    builds_on = ""
    if lock.builds_on is not None:
        body = without(body, set(pins(lock.builds_on.path.read_text())))
        builds_on = (
            f"# builds on: {lock.builds_on.relative()} (the {lock.builds_on.layer} its functions "
            "also have: its packages are not repeated)\n"
        )
    what = f", its extra `{lock.extra}`" if lock.extra else ", the library's dependencies"
    inputs = "".join(f"# input: {line}\n" for line in pyproject_inputs(lock))
    header = HEADER.format(
        layer=lock.layer, what=what, as_of=as_of, inputs=inputs, builds_on=builds_on
    )
    lock.path.write_text(header + body)
    print(f"{lock.relative()}: {len(pins(body))} packages")


#: template.yaml's default Powertools release for AWS's managed layer: the one InboxLayer's lock
#: pins, so that both choices of PowertoolsLayer run the Powertools the tests ran.
MANAGED_DEFAULT = re.compile(r"(\n  ManagedPowertoolsVersion:\n    Type: String\n    Default: )\S+")


def follow_in_template(template: Path = REPO_ROOT / "template.yaml") -> None:
    version = pins(INBOX.path.read_text())["aws-lambda-powertools"]
    text, found = MANAGED_DEFAULT.subn(rf"\g<1>{version}", template.read_text())
    if found != 1:
        sys.exit("template.yaml: no ManagedPowertoolsVersion parameter with a Default to set")
    template.write_text(text)
    print(f"template.yaml: ManagedPowertoolsVersion defaults to {version}")


def verify(lock: LayerLock, scratch: Path) -> None:
    """Every file the layer's Makefile would install, downloaded for each platform and Python with
    --require-hashes; a lock that builds on another is downloaded together with it, so that its
    dependencies are proven to be in one of the two."""
    files = [lock.path] if lock.builds_on is None else [lock.builds_on.path, lock.path]
    for platform in PLATFORMS:
        for python in PYTHON_VERSIONS:
            command = [sys.executable, "-m", "pip", "download", "--quiet"]
            command += ["--disable-pip-version-check", "--require-hashes", "--only-binary=:all:"]
            command += ["--platform", platform, "--python-version", python]
            command += ["--implementation", "cp", "--dest", str(scratch / "downloads")]
            for path in files:
                command += ["-r", str(path)]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.exit(f"{lock.relative()}: {platform}, Python {python}:\n{done.stderr}")
            print(f"{lock.relative()}: installs on {platform}, Python {python}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--as-of", help="the index's moment, RFC 3339 (default: now)")
    parser.add_argument("--no-verify", action="store_true", help="skip the downloads")
    args = parser.parse_args()
    as_of = args.as_of or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with tempfile.TemporaryDirectory(prefix="locks-") as folder:
        scratch = Path(folder)
        for lock in LOCKS:  # in order: a lock is made after the one it builds on
            write_lock(lock, as_of, scratch)
        follow_in_template()
        if not args.no_verify:
            for lock in LOCKS:
                verify(lock, scratch)


if __name__ == "__main__":
    main()
