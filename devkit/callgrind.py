"""Count the instructions a command executes, under valgrind's callgrind: nearly the same count
on every run, whatever else the machine is doing (a difference of two runs, as the benchmarks
take, repeats within about 1%). The benchmarks' deterministic measure (`cold_start.py`,
`consumer_instructions.py`, `unit_of_work_instructions.py`), and their `--library` option for
measuring other versions of the library side by side."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from devkit.paths import LAYER_DIR


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


#: The libc call a program makes to mark where its counted window starts and ends
#: (`os.getppid()`): callgrind dumps its counters before each call (`--dump-before`).
WINDOW_MARK = "getppid"


def count_window(command: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None) -> int:
    """Instructions `command` executes (all its threads) between its first and second
    `os.getppid()` calls: callgrind zeroes its counters at each, so what the interpreter's
    start and imports cost, which moves by several million instructions from one run to the
    next, is no part of it. Exits when the command fails or marks no single window."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        counted = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--dump-before={WINDOW_MARK}",
                f"--callgrind-out-file={out}",
                *command,
            ],
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        if counted.returncode != 0:
            sys.exit(f"callgrind failed for {' '.join(command)[:200]}:\n{counted.stderr[-2000:]}")
        parts = sorted(Path(folder).glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
        if len(parts) != 2:  # before the window, the window (the rest is `callgrind.out`)
            sys.exit(f"expected one window marked by two {WINDOW_MARK}() calls, got {parts}")
        found = re.search(r"^(?:totals|summary): (\d+)", parts[1].read_text(), re.MULTILINE)
        if found is None:
            sys.exit(f"no instruction count in {parts[1]}")
        return int(found.group(1))


def add_library_option(parser: argparse.ArgumentParser) -> None:
    """`--library DIR`, repeatable: a `layers/inbox` folder (of a git worktree, say) to measure
    instead of this checkout's; each one is a row of the same run."""
    parser.add_argument(
        "--library",
        action="append",
        type=Path,
        help="a layers/inbox folder to measure instead of this checkout's (repeatable)",
    )


def chosen_libraries(args: argparse.Namespace) -> list[Path]:
    """The folders `--library` named, else this checkout's library."""
    return list(args.library or [LAYER_DIR])
