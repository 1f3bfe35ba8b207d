"""Run the `lambda-inbox` command line from tests: in-process through `main` (stdout and stderr
captured by pytest's `capsys`), or as a separate process (`python -m lambda_inbox_tools.cli`) with this
checkout's library first on `PYTHONPATH`."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devkit.paths import CHECKOUT_PYTHONPATH, REPO_ROOT
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


def cli_in(capsys: pytest.CaptureFixture[str], environment: Mapping[str, str]) -> Cli:
    """`Cli` as a shell with `environment` (a command's printed exports, or this session's with
    them) runs a command, without a process start for each: no AWS setting of this session's
    but `environment`'s, and every variable `environment` sets or changes."""
    unset: dict[str, str | None] = dict.fromkeys(n for n in os.environ if n.startswith("AWS_"))
    changed = {
        name: value
        for name, value in environment.items()
        if name.startswith("AWS_") or os.environ.get(name) != value
    }
    return Cli(capsys, **(unset | changed))


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


@dataclass(frozen=True)
class LocalRun:
    """`lambda-inbox local` running as a process (`running_local`)."""

    process: subprocess.Popen[str]
    #: The environment it was started with, plus the exports it printed.
    environment: dict[str, str]
    #: What it printed up to the awaited line.
    lines: list[str]


@contextlib.contextmanager
def running_local(
    template: Path, *, stack: str, until: str, columns: str = COLUMNS, timeout: float = 180
) -> Iterator[LocalRun]:
    """`lambda-inbox local --template TEMPLATE --stack-name STACK` started as a user starts it
    (no AWS endpoint in its environment, this checkout's library), read until it prints a line
    holding `until`; killed on exit if it still runs."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT")}
    environment |= {"PYTHONPATH": CHECKOUT_PYTHONPATH, "COLUMNS": columns}
    process = subprocess.Popen(
        command("local", "--template", str(template), "--stack-name", stack),
        cwd=REPO_ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
            if until in line:
                break
        yield LocalRun(process, {**environment, **exports_of(lines)}, lines)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)


def exports_of(lines: Iterable[str]) -> dict[str, str]:
    """The variables of the `export NAME=VALUE ...` lines among `lines`."""
    exports: dict[str, str] = {}
    for line in lines:
        if line.strip().startswith("export "):
            for item in line.strip().removeprefix("export ").split():
                name, _, value = item.partition("=")
                exports[name] = value
    return exports


def answers(url: str) -> bool:
    """Whether something accepts connections at `url`'s host and port."""
    parsed = urllib.parse.urlsplit(url)
    try:
        socket.create_connection((parsed.hostname, parsed.port or 80), timeout=2).close()
    except OSError:
        return False
    return True
