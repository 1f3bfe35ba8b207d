"""`lambda-inbox`: the operator's command line (show, failed, redrive, stats, ...).

Part of the operator's tooling (`lambda_inbox_tools`), never of the Lambda layer, and usable only
with the `cli` extra, `pip install 'lambda-inbox[cli]'`, which brings Typer and Rich (`local`
adds what `lambda-inbox local` needs). Without them `main` says so in one line and exits 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

#: Distributions of the `cli` extra, by their import names.
_EXTRA_MODULES = frozenset({"typer", "rich", "click", "shellingham", "pygments", "markdown_it"})
MISSING_EXTRA = (
    "lambda-inbox: the command line needs its extra dependencies: pip install 'lambda-inbox[cli]'"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default: `sys.argv[1:]`); returns the exit status."""
    try:
        from .app import run
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in _EXTRA_MODULES:
            raise
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    return run(argv)


__all__ = ["MISSING_EXTRA", "main"]
