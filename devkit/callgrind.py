"""Count the instructions a command executes, under valgrind's callgrind: the same count on
every run (within 0.1%), whatever else the machine is doing. The benchmarks' deterministic
measure (`benchmarks/cold_start.py`, `benchmarks/consumer_instructions.py`)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence


def require_valgrind() -> None:
    if shutil.which("valgrind") is None:
        sys.exit("instruction counts need valgrind (apt-get install valgrind)")


def count_instructions(
    command: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None
) -> int:
    """Instructions `command` executes (all its threads); exits with callgrind's output when
    the command fails."""
    counted = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", counted.stderr)
    if counted.returncode != 0 or found is None:
        sys.exit(f"callgrind failed for {' '.join(command)[:200]}:\n{counted.stderr[-2000:]}")
    return int(found.group(1))
