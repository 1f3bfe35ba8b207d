"""What the two distributions built from this repository must hold, and what they must not.

- `lambda-inbox` (pyproject.toml): the library `lambda_inbox` and nothing else; boto3 only under
  an extra (the Lambda runtime ships it); its extras are the ones a user installs.
- `lambda-inbox-tools` (tools/pyproject.toml): the tools `lambda_inbox_tools` (the command line,
  the local stack, the testing kit and its pytest plugin), at the library's version.

`make dist` builds both with `python -m build`, runs `twine check --strict`, then
`scripts/check_dist.py`, which reads the archives' file lists and metadata and reports every rule
broken here. The rules are kept apart from the archive reading so that tests prove each one with
a broken list (tests/unit/project/test_distribution.py); the metadata rule also reads the pyproject files
themselves, so `make check` catches a wrong extra or pin before anything is built.
"""

from __future__ import annotations

import re
import tarfile
import tomllib
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from devkit.paths import REPO_ROOT


@dataclass(frozen=True, slots=True)
class Distribution:
    name: str
    package: str
    #: The folder of its pyproject.toml (what `python -m build` is given).
    project: Path
    #: The folder holding the import package.
    package_parent: Path
    #: The extras a user installs, and nothing else.
    extras: frozenset[str]
    #: Files the sdist carries besides the sources, relative to `project`.
    sdist_files: tuple[str, ...]
    #: Files its wheel's .dist-info carries.
    dist_info_files: tuple[str, ...]

    @property
    def stem(self) -> str:
        """The name as archive file names spell it (`lambda_inbox_tools`)."""
        return self.name.replace("-", "_")

    def wheel_name(self, version: str) -> str:
        return f"{self.stem}-{version}-py3-none-any.whl"

    def sdist_name(self, version: str) -> str:
        return f"{self.stem}-{version}.tar.gz"


_DIST_INFO = ("METADATA", "WHEEL", "RECORD", "licenses/LICENSE")
LIBRARY = Distribution(
    name="lambda-inbox",
    package="lambda_inbox",
    project=REPO_ROOT,
    package_parent=REPO_ROOT / "layers/inbox",
    extras=frozenset({"boto3", "kafka-codecs", "cli", "local", "kafka-replay", "testing"}),
    sdist_files=("PKG-INFO", "pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"),
    dist_info_files=_DIST_INFO,
)
TOOLS = Distribution(
    name="lambda-inbox-tools",
    package="lambda_inbox_tools",
    project=REPO_ROOT / "tools",
    package_parent=REPO_ROOT / "tools",
    extras=frozenset({"cli", "local", "kafka-replay", "testing"}),
    sdist_files=("PKG-INFO", "pyproject.toml", "README.md", "LICENSE"),
    # The `lambda-inbox` console script and the kit's pytest plugin.
    dist_info_files=(*_DIST_INFO, "entry_points.txt"),
)
DISTRIBUTIONS = (LIBRARY, TOOLS)
#: Top-level folders of the repository that no archive may carry.
NEVER_SHIPPED = ("tests", "devkit", "functions", "examples", "benchmarks", "scripts", "events")
#: What the Lambda runtime ships: the library may require it only under an extra.
RUNTIME_PROVIDED = frozenset({"boto3", "botocore"})


def source_modules(dist: Distribution) -> dict[str, str]:
    """Every module and typing marker of `dist`'s package in this checkout: its path in the
    wheel (`lambda_inbox/...`) mapped to its path in the sdist (relative to the project)."""
    found: dict[str, str] = {}
    for path in (dist.package_parent / dist.package).rglob("*"):
        if path.suffix in (".py", ".typed") and "__pycache__" not in path.parts:
            in_wheel = path.relative_to(dist.package_parent).as_posix()
            found[in_wheel] = path.relative_to(dist.project).as_posix()
    return found


def wheel_problems(dist: Distribution, names: Iterable[str], version: str) -> list[str]:
    """What is wrong with `dist`'s wheel holding `names` for `version` (empty when nothing)."""
    listed = set(names)
    dist_info = f"{dist.stem}-{version}.dist-info"
    # A subpackage without __init__.py, or a file left out of package-data, is missing.
    problems = [f"missing {path}" for path in sorted(source_modules(dist).keys() - listed)]
    problems += [
        f"missing {dist_info}/{name}"
        for name in dist.dist_info_files
        if f"{dist_info}/{name}" not in listed
    ]
    for name in sorted(listed):
        if PurePosixPath(name).parts[0] not in (dist.package, dist_info):
            problems.append(f"unexpected {name}")
        problems += _compiled_or_cache(name)
    return problems


def sdist_problems(dist: Distribution, names: Iterable[str], version: str) -> list[str]:
    """What is wrong with `dist`'s sdist holding `names` for `version` (empty when nothing)."""
    prefix = f"{dist.stem}-{version}/"
    inside = {name.removeprefix(prefix) for name in names if name.startswith(prefix)}
    problems = [
        f"outside {prefix}: {name}" for name in sorted(names) if not name.startswith(prefix)
    ]
    problems += [f"missing {path}" for path in sorted(set(source_modules(dist).values()) - inside)]
    problems += [f"missing {name}" for name in dist.sdist_files if name not in inside]
    others = {d.package for d in DISTRIBUTIONS if d is not dist}
    for name in sorted(inside):
        parts = PurePosixPath(name).parts
        if parts and (parts[0] in NEVER_SHIPPED or others & set(parts)):
            problems.append(f"unexpected {name}")
        if name == "DEVELOPERS.md":
            problems.append("unexpected DEVELOPERS.md (the maintainers' guide)")
        problems += _compiled_or_cache(name)
    return problems


def metadata_problems(
    dist: Distribution, version: str, requires: Iterable[str], extras: Iterable[str]
) -> list[str]:
    """What is wrong with `dist`'s published requirements (`Requires-Dist` lines, an extra's as
    `...; extra == "name"`) and extras for `version`: an extra a user does not install (the
    maintainers' `test`, `dev`), boto3 required outside an extra, a sibling distribution pinned
    at anything but `==version`."""
    published = set(extras)
    problems = [f"unexpected extra {extra!r}" for extra in sorted(published - dist.extras)]
    problems += [f"missing extra {extra!r}" for extra in sorted(dist.extras - published)]
    siblings = {canonicalize_name(d.name) for d in DISTRIBUTIONS if d is not dist}
    for line in requires:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        under_extra = requirement.marker is not None and "extra" in str(requirement.marker)
        if dist is LIBRARY and name in RUNTIME_PROVIDED and not under_extra:
            problems.append(f"{line}: required outside an extra (the Lambda runtime ships it)")
        if name in siblings and str(requirement.specifier) != f"=={version}":
            problems.append(f"{line}: not pinned at this version, =={version}")
    return problems


def floor_problems(requires: Iterable[str], installed: Mapping[str, str]) -> list[str]:
    """`make check-lowest`'s proof: every requirement's floor (its `>=` version) is the version
    installed for the tests that ran, else that floor is not what they proved (the pins between
    the two distributions, and requirements without a floor, are not floors)."""
    siblings = {canonicalize_name(d.name) for d in DISTRIBUTIONS}
    problems: list[str] = []
    for line in requires:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        floors = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if name in siblings or not floors:
            continue
        version = installed.get(name)
        if version is None:
            problems.append(f"{line}: not installed")
        elif Version(version) != Version(floors[0]):
            problems.append(f"{line}: {version} installed, not the floor {floors[0]}")
    return problems


def pyproject_requirements(dist: Distribution) -> tuple[list[str], list[str], str | None]:
    """`dist`'s requirements as its metadata will list them, its extras, and its static
    version (None when dynamic), read from its pyproject.toml."""
    project: dict[str, Any] = tomllib.loads((dist.project / "pyproject.toml").read_text())[
        "project"
    ]
    optional: Mapping[str, list[str]] = project.get("optional-dependencies", {})
    requires = list(project.get("dependencies", []))
    requires += [
        f'{line}; extra == "{extra}"' for extra, lines in optional.items() for line in lines
    ]
    return requires, list(optional), project.get("version")


def wheel_metadata(path: Path) -> tuple[list[str], list[str]]:
    """The `Requires-Dist` and `Provides-Extra` lines of a built wheel's METADATA."""
    with zipfile.ZipFile(path) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        headers = HeaderParser().parsestr(wheel.read(name).decode())
    return headers.get_all("Requires-Dist") or [], headers.get_all("Provides-Extra") or []


def _compiled_or_cache(name: str) -> list[str]:
    return [f"unexpected {name}"] if re.search(r"__pycache__|\.py[cod]$", name) else []


def archive_names(path: Path) -> list[str]:
    """The file names inside a wheel (zip) or an sdist (tar.gz), directories left out."""
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as wheel:
            return [info.filename for info in wheel.infolist() if not info.is_dir()]
    with tarfile.open(path) as sdist:
        return [member.name for member in sdist.getmembers() if member.isfile()]
