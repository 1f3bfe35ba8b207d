"""Run the `lambda-inbox` command line from tests: in-process through `main` (stdout and stderr
captured by pytest's `capsys`), or as a separate process (`python -m lambda_inbox_tools.cli`) with this
checkout's library first on `PYTHONPATH`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from devkit.paths import CHECKOUT_PYTHONPATH
from lambda_inbox_tools.cli import main
from lambda_inbox_tools.services.offline import patched_environ

#: Wide enough that Rich never wraps a line the tests look for.
COLUMNS = "200"


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        """stdout as one JSON document (fails if anything else is on stdout)."""
        return json.loads(self.out)


class Cli:
    """`Cli(capsys)("failed", "--table", "t")` runs `main` and returns its `Run`."""

    def __init__(self, capsys: pytest.CaptureFixture[str], **env: str | None) -> None:
        self._capsys = capsys
        self._env: dict[str, str | None] = {"COLUMNS": COLUMNS, "INBOX_TABLE": None, **env}

    def __call__(self, *args: str, **env: str | None) -> Run:
        self._capsys.readouterr()
        with patched_environ({**self._env, **env}):
            code = main(list(args))
        out, err = self._capsys.readouterr()
        return Run(code, out, err)


def process_env(**extra: str) -> dict[str, str]:
    """The test session's environment, this checkout's library first, wide Rich output."""
    env = dict(os.environ)
    env.pop("INBOX_TABLE", None)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join([CHECKOUT_PYTHONPATH, *([path] if path else [])])
    env["COLUMNS"] = COLUMNS
    env.update(extra)
    return env


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "lambda_inbox_tools.cli", *args]


def run_process(*args: str, timeout: float = 120, **env: str) -> Run:
    done = subprocess.run(
        command(*args),
        env=process_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def start_process(*args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command(*args),
        env=process_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
