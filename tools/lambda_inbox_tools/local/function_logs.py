"""What in-process functions print, into a file while the run's display keeps the terminal."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


@contextlib.contextmanager
def function_logs(path: Path) -> Iterator[TextIO]:
    """sys.stdout -> `path` while the block runs (what in-process functions print)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    terminal = sys.stdout
    with path.open("w", encoding="utf-8") as log:
        sys.stdout = log
        try:
            yield terminal
        finally:
            sys.stdout = terminal
