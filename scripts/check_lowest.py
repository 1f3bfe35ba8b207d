"""`make check-lowest`'s first step, run by the interpreter of .venv-lowest: every floor the two
distributions publish (pyproject.toml, tools/pyproject.toml, extras included) is the version
installed there, so the tests that run next prove that floor. A floor the resolver could not
install (another requirement asks for more) fails here, naming it: raise it to what is installed.

Usage: .venv-lowest/bin/python scripts/check_lowest.py
"""

from __future__ import annotations

import sys
from importlib.metadata import distributions

from packaging.utils import canonicalize_name

from devkit.distribution import DISTRIBUTIONS, floor_problems, pyproject_requirements


def main() -> int:
    installed: dict[str, str] = {
        canonicalize_name(d.metadata["Name"]): d.version for d in distributions()
    }
    failed = False
    for dist in DISTRIBUTIONS:
        requires, _, _ = pyproject_requirements(dist)
        print(f"{dist.name}: {len(requires)} requirements at their floors")
        for problem in floor_problems(requires, installed):
            print(f"  PROBLEM: {problem}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
