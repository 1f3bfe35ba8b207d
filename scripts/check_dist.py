"""`make dist`'s last step: the built wheel and sdist hold what devkit.distribution says.

Prints each archive's file list, then every rule it breaks; exit status 1 when any.

Usage: .venv/bin/python scripts/check_dist.py [DIST_DIR]   (default: dist)
"""

from __future__ import annotations

import sys
from pathlib import Path

from devkit.distribution import archive_names, sdist_problems, wheel_problems
from lambda_inbox import __version__


def main(argv: list[str]) -> int:
    dist = Path(argv[0] if argv else "dist")
    wheel = dist / f"lambda_inbox-{__version__}-py3-none-any.whl"
    sdist = dist / f"lambda_inbox-{__version__}.tar.gz"
    failed = False
    for archive, rules in ((wheel, wheel_problems), (sdist, sdist_problems)):
        if not archive.is_file():
            print(f"{archive}: not built (version {__version__})")
            failed = True
            continue
        names = sorted(archive_names(archive))
        print(f"{archive}: {len(names)} files")
        for name in names:
            print(f"  {name}")
        for problem in rules(names, __version__):
            print(f"  PROBLEM: {problem}")
            failed = True
    print("dist: FAILED" if failed else "dist: wheel and sdist hold what they must, and no more")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
