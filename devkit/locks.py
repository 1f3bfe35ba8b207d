"""The Lambda layers' locks: every package a layer installs, pinned `==` with the hashes of all its
files, made from pyproject.toml by `make locks` (scripts/update_locks.py) and installed by the
layers' Makefiles with `pip install --require-hashes`.

A lock's header names what it was made from: the requirements pyproject.toml gave (`# input:`),
the moment of the package index it was resolved against (`# resolved:`), and the lock it builds
on (`# builds on:`, for a layer whose functions also have InboxLayer). `lock_problems` reads a
lock without the network: its inputs are pyproject.toml's of today (else it is stale), every
requirement is pinned with hashes, every input is pinned inside its range here or in the lock it
builds on. tests/unit/project/test_layer_locks.py runs it on both locks (`make check`), and proves each
rule with a broken lock.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from devkit.paths import REPO_ROOT


@dataclass(frozen=True, slots=True)
class LayerLock:
    layer: str
    path: Path
    #: The pyproject.toml extra the layer installs (None: the library's own dependencies).
    extra: str | None
    #: The lock whose packages this layer's functions have already (not repeated here).
    builds_on: LayerLock | None = None

    def relative(self) -> str:
        return self.path.relative_to(REPO_ROOT).as_posix()


INBOX = LayerLock("InboxLayer", REPO_ROOT / "layers/inbox/requirements.lock", extra=None)
KAFKA_CODECS = LayerLock(
    "KafkaCodecsLayer",
    REPO_ROOT / "layers/kafka-codecs/requirements.lock",
    extra="kafka-codecs",
    builds_on=INBOX,
)
LOCKS = (INBOX, KAFKA_CODECS)
#: The platforms and Pythons every lock must install on: Lambda's arm64 (the template's) and
#: x86_64 (`make sam-local`), the python3.13 runtime (the template's) and python3.12.
PLATFORMS = ("manylinux2014_aarch64", "manylinux2014_x86_64")
PYTHON_VERSIONS = ("3.12", "3.13")

_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s\\;]+)\s*(?P<rest>.*)$")
_HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def pyproject_inputs(lock: LayerLock, pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """What `lock` is made from: the library's dependencies, or one of its extras."""
    project = tomllib.loads(pyproject.read_text())["project"]
    if lock.extra is None:
        return list(project["dependencies"])
    return list(project["optional-dependencies"][lock.extra])


def header_values(text: str, key: str) -> list[str]:
    """The values of a lock header's `# key: value` lines, in order."""
    prefix = f"# {key}: "
    return [line[len(prefix) :].strip() for line in text.splitlines() if line.startswith(prefix)]


def pins(text: str) -> dict[str, str]:
    """Every `name==version` of a lock, by canonical name."""
    found: dict[str, str] = {}
    for entry in _entries(text):
        match = _PIN.match(entry)
        if match:
            found[canonicalize_name(match["name"])] = match["version"]
    return found


def lock_problems(text: str, inputs: list[str], builds_on: str | None = None) -> list[str]:
    """What is wrong with a lock holding `text`, made from `inputs` (pyproject.toml's of today),
    on top of the lock holding `builds_on` (empty when nothing)."""
    problems: list[str] = []
    made_from = header_values(text, "input")
    if made_from != inputs:
        problems.append(
            f"stale: made from {made_from}, pyproject.toml says {inputs}: run `make locks`"
        )
    if not header_values(text, "resolved"):
        problems.append("no `# resolved:` line: the index's moment it was resolved against")
    for entry in _entries(text):
        match = _PIN.match(entry)
        if match is None:
            problems.append(f"not pinned with ==: {entry.split()[0]}")
            continue
        if not _HASH.search(match["rest"]):
            problems.append(f"no hash: {match['name']}=={match['version']}")
        if _HASH.sub("", match["rest"]).strip(" \\"):
            problems.append(f"more than a pin and its hashes: {entry}")
    available = {**(pins(builds_on) if builds_on else {}), **pins(text)}
    for line in inputs:
        problems += _input_problems(line, available)
    return problems


def _input_problems(line: str, available: dict[str, str]) -> list[str]:
    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return [f"input {line!r} is not a requirement"]
    version = available.get(canonicalize_name(requirement.name))
    if version is None:
        return [f"input {line} is not pinned"]
    if not requirement.specifier.contains(version, prereleases=True):
        return [f"input {line} is pinned at {version}, outside its range"]
    return []


def _entries(text: str) -> list[str]:
    """A lock's requirements, each with its continuation lines joined (comments left out)."""
    entries: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removesuffix("\\").strip()
        if raw[:1].isspace() and entries:
            entries[-1] += " " + line
        else:
            entries.append(line)
    return entries
