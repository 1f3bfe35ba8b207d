"""What the lambda-inbox wheel and sdist must hold, and what they must not.

`make dist` builds both with `python -m build`, runs `twine check --strict`, then
`scripts/check_dist.py`, which reads the archives' file lists and reports every rule broken here.
The rules are kept apart from the archive reading so that tests can prove each one with a broken
list (tests/unit/test_distribution.py).
"""

from __future__ import annotations

import re
import tarfile
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from devkit.paths import REPO_ROOT

PACKAGES = {"lambda_inbox": REPO_ROOT / "layers/inbox", "lambda_inbox_tools": REPO_ROOT / "tools"}
#: Top-level folders of the repository that no archive may carry.
NEVER_SHIPPED = ("tests", "devkit", "functions", "examples", "benchmarks", "scripts", "events")
DIST_INFO_FILES = ("METADATA", "WHEEL", "RECORD", "entry_points.txt", "licenses/LICENSE")
SDIST_FILES = ("PKG-INFO", "pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md")


def source_modules() -> dict[str, str]:
    """Every module and typing marker of the two packages in this checkout: its path in the wheel
    (`lambda_inbox/...`) mapped to its path in the repository and the sdist."""
    found: dict[str, str] = {}
    for package, root in PACKAGES.items():
        for path in (root / package).rglob("*"):
            if path.suffix in (".py", ".typed") and "__pycache__" not in path.parts:
                found[path.relative_to(root).as_posix()] = path.relative_to(REPO_ROOT).as_posix()
    return found


def wheel_problems(names: Iterable[str], version: str) -> list[str]:
    """What is wrong with a wheel holding `names` for `version` (empty when nothing)."""
    listed = set(names)
    dist_info = f"lambda_inbox-{version}.dist-info"
    # A subpackage without __init__.py, or a file left out of package-data, is missing.
    problems = [f"missing {path}" for path in sorted(source_modules().keys() - listed)]
    problems += [
        f"missing {dist_info}/{name}"
        for name in DIST_INFO_FILES
        if f"{dist_info}/{name}" not in listed
    ]
    for name in sorted(listed):
        top = PurePosixPath(name).parts[0]
        if top not in (*PACKAGES, dist_info):
            problems.append(f"unexpected {name}")
        problems += _compiled_or_cache(name)
    return problems


def sdist_problems(names: Iterable[str], version: str) -> list[str]:
    """What is wrong with an sdist holding `names` for `version` (empty when nothing)."""
    prefix = f"lambda_inbox-{version}/"
    inside = {name.removeprefix(prefix) for name in names if name.startswith(prefix)}
    problems = [
        f"outside {prefix}: {name}" for name in sorted(names) if not name.startswith(prefix)
    ]
    problems += [f"missing {path}" for path in sorted(set(source_modules().values()) - inside)]
    problems += [f"missing {name}" for name in SDIST_FILES if name not in inside]
    for name in sorted(inside):
        parts = PurePosixPath(name).parts
        if parts and parts[0] in NEVER_SHIPPED:
            problems.append(f"unexpected {name}")
        if name == "DEVELOPERS.md":
            problems.append("unexpected DEVELOPERS.md (the maintainers' guide)")
        problems += _compiled_or_cache(name)
    return problems


def _compiled_or_cache(name: str) -> list[str]:
    return [f"unexpected {name}"] if re.search(r"__pycache__|\.py[cod]$", name) else []


def archive_names(path: Path) -> list[str]:
    """The file names inside a wheel (zip) or an sdist (tar.gz), directories left out."""
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as wheel:
            return [info.filename for info in wheel.infolist() if not info.is_dir()]
    with tarfile.open(path) as sdist:
        return [member.name for member in sdist.getmembers() if member.isfile()]
