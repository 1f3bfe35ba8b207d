"""`make dist`'s last step: the built wheels and sdists of lambda-inbox and lambda-inbox-tools hold
what devkit.distribution says, and their published requirements keep its rules.

Prints each archive's file list, then every rule it breaks; exit status 1 when any.

Usage: .venv/bin/python scripts/check_dist.py [DIST_DIR]   (default: dist)
"""

from __future__ import annotations

import sys
from pathlib import Path

from devkit.distribution import (
    DISTRIBUTIONS,
    archive_names,
    metadata_problems,
    sdist_problems,
    wheel_metadata,
    wheel_problems,
)
from lambda_inbox import __version__


def main(argv: list[str]) -> int:
    dist_dir = Path(argv[0] if argv else "dist")
    failed = False
    for dist in DISTRIBUTIONS:
        wheel = dist_dir / dist.wheel_name(__version__)
        sdist = dist_dir / dist.sdist_name(__version__)
        for archive, rules in ((wheel, wheel_problems), (sdist, sdist_problems)):
            if not archive.is_file():
                print(f"{archive}: not built (version {__version__})")
                failed = True
                continue
            names = sorted(archive_names(archive))
            print(f"{archive}: {len(names)} files")
            for name in names:
                print(f"  {name}")
            problems = rules(dist, names, __version__)
            if archive is wheel:
                requires, extras = wheel_metadata(wheel)
                print(f"  requires: {'; '.join(requires)}")
                problems += metadata_problems(dist, __version__, requires, extras)
            for problem in problems:
                print(f"  PROBLEM: {problem}")
                failed = True
    print("dist: FAILED" if failed else "dist: wheels and sdists hold what they must, and no more")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
