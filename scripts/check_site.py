"""`make docs-build`'s last step: no page of the built site loads anything from another site.

Usage: .venv/bin/python scripts/check_site.py [SITE_DIR]   (default: site)
"""

from __future__ import annotations

import sys
from pathlib import Path

from devkit.site_check import site_problems


def main(argv: list[str]) -> int:
    site = Path(argv[0] if argv else "site")
    pages = list(site.rglob("*.html"))
    if not pages:
        print(f"{site}: no pages (build the site first)")
        return 1
    problems = site_problems(site)
    for problem in problems:
        print(f"loads from another site: {problem}")
    print(
        f"{len(pages)} pages checked: "
        + ("FAILED" if problems else "everything is served by the site")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
