"""The processes `make sam-local` starts (each stopped by process id, also on failure), timed
steps, bounded waits and the lines it prints."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from devkit.paths import REPO_ROOT

from .settings import SamLocalError

# ---------------------------------------------------------------------------- output, timing


class Clock:
    """Times the steps of the run and prints them at the end."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.steps: list[tuple[str, float]] = []

    @contextlib.contextmanager
    def step(self, title: str) -> Iterator[None]:
        print(f"\n== {title} [{time.monotonic() - self.started:.1f} s]", flush=True)
        began = time.monotonic()
        try:
            yield
        finally:
            self.steps.append((title, time.monotonic() - began))

    def summary(self) -> None:
        print("\n== timings")
        for title, seconds in self.steps:
            print(f"   {seconds:7.1f} s  {title}")
        print(f"   {time.monotonic() - self.started:7.1f} s  total")


def say(line: str) -> None:
    print(f"   {line}", flush=True)


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def shown(path: Path) -> str:
    """A path as printed: relative to the repository when inside it."""
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------- processes


@dataclass
class Background:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    stop_signal: signal.Signals
    stop_timeout: float


@dataclass
class Cleanup:
    name: str
    action: Callable[[], None]


class Processes:
    """The background processes this run started, and clean-ups to run at the end: stopped by
    process id and run in reverse order (what was started last, first)."""

    def __init__(self) -> None:
        self.running: list[Background | Cleanup] = []

    def on_stop(self, name: str, action: Callable[[], None]) -> None:
        self.running.append(Cleanup(name, action))

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log: Path,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
        stop_timeout: float = 30.0,
    ) -> Background:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=None if env is None else dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C in the terminal reaches this script only, which then
                # stops the processes in order.
                start_new_session=True,
            )
        started = Background(name, process, log, stop_signal, stop_timeout)
        self.running.append(started)
        say(f"started {name} (pid {process.pid}, log {shown(log)})")
        return started

    def stop(self, background: Background) -> None:
        """Its stop signal, then SIGTERM, then SIGKILL, each after a bounded wait."""
        if background not in self.running:
            return
        self.running.remove(background)
        process = background.process
        escalation = [(background.stop_signal, background.stop_timeout)]
        if background.stop_signal != signal.SIGTERM:
            escalation.append((signal.SIGTERM, 10.0))
        escalation.append((signal.SIGKILL, 15.0))
        for signum, timeout in escalation:
            if process.poll() is not None:
                break
            if signum != background.stop_signal:
                say(f"{background.name} (pid {process.pid}) still running: {signum.name}")
            process.send_signal(signum)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=timeout)
        say(f"stopped {background.name} (pid {process.pid}, exit {process.returncode})")

    def stop_all(self) -> None:
        for entry in reversed(list(self.running)):
            try:
                if isinstance(entry, Cleanup):
                    self.running.remove(entry)
                    entry.action()
                else:
                    self.stop(entry)
            except Exception as error:  # keep stopping the others
                say(f"{entry.name}: {error}")


def wait_until(
    what: str,
    ready: Callable[[], object],
    *,
    timeout: float,
    process: Background | None = None,
    interval: float = 0.25,
) -> float:
    """Call `ready` until it returns a true value (exceptions count as not ready); the seconds it
    took. Fails when `timeout` passes or when `process` exits first (with its log)."""
    began = time.monotonic()
    last_error: Exception | None = None
    while True:
        if process is not None and process.process.poll() is not None:
            raise SamLocalError(
                f"{process.name} exited with code {process.process.returncode} while waiting "
                f"for: {what}\n{tail(process.log)}"
            )
        try:
            if ready():
                return time.monotonic() - began
        except Exception as error:
            last_error = error
        if time.monotonic() - began > timeout:
            details = f" (last error: {last_error})" if last_error else ""
            log = f"\n{tail(process.log)}" if process is not None else ""
            raise SamLocalError(
                f"timed out after {timeout:.0f} s waiting for: {what}{details}{log}"
            )
        time.sleep(interval)


def run(
    argv: Sequence[str],
    *,
    what: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    capture: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run a command to completion. With `log`, its output goes there (and its tail into the
    error); with `capture`, into the result (and stderr into the error); else it is printed."""
    try:
        if capture:
            done = subprocess.run(
                list(argv),
                cwd=REPO_ROOT,
                env=None if env is None else dict(env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        elif log is None:
            done = subprocess.run(
                list(argv),
                cwd=REPO_ROOT,
                env=None if env is None else dict(env),
                stdin=subprocess.DEVNULL,
                text=True,
                timeout=timeout,
            )
        else:
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("w") as out:
                done = subprocess.run(
                    list(argv),
                    cwd=REPO_ROOT,
                    env=None if env is None else dict(env),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=timeout,
                )
    except subprocess.TimeoutExpired as error:
        raise SamLocalError(f"{what}: no result after {timeout:.0f} s") from error
    except OSError as error:
        raise SamLocalError(f"{what}: cannot run {argv[0]}: {error}") from error
    if done.returncode != 0:
        output = f"\n{tail(log)}" if log is not None else ""
        if capture:
            output = f"\n{done.stderr.strip()}"
        raise SamLocalError(f"{what}: exit status {done.returncode}{output}")
    return done


def listening(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, port)) == 0
