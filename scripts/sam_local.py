"""`make sam-local`: the functions of template.yaml in containers with the real SAM CLI, offline.

1. Host: Debian's `docker.io` and `debootstrap` from apt when missing; `dockerd` started in the
   background when no Docker engine answers (and stopped at the end).
2. Image: a local stand-in for the Lambda Python 3.13 x86_64 image, built once by
   `scripts/build-lambda-image.sh` (nothing can be pulled here) and checked to start a container.
3. Template: a derived copy, `.aws-sam-local/template.yaml` (x86_64 instead of arm64; the endpoint
   and credential variables declared in every function, because `--env-vars` ignores undeclared
   ones), built with `sam build` into `.aws-sam-local/build` (layer wheels for x86_64).
4. Services: DynamoDB Local (`-sharedDb`), a moto server for SQS and a webhook receiver (2xx to
   every POST, calls counted per `Idempotency-Key`), reachable from the containers at the docker
   bridge address. Each phase gets its own tables and queues, created from template.yaml by the
   local stack's template reader (`lambda_inbox_tools.local`), named `<phase>-<LogicalId>`.
5. `sam local invoke` of every function with its sample events: `events/<source>-<subject>-*.json`
   goes to the function whose code folder names `<subject>` (`sqs-order-single.json` ->
   `functions/order_events`, `schedule-reaper-run.json` -> `functions/inbox_reaper`). Each
   response is printed and checked, then the tables, queues and webhook calls (SCENARIOS).
6. `sam local start-lambda --warm-containers EAGER` with the local stack's tables and queues in
   its `--env-vars` (`lambda_inbox_tools.local.sam_env`), driven by `lambda-inbox local
   --invoke-endpoint`: the template's event sources emulated (SQS, Kafka, the reaper's schedule)
   and the demo workload (duplicates, poison, a stuck lease, the redrive) run through the
   containers. Its report is printed; its invariants must hold.

Everything the run starts is stopped by process id, also on failure or interruption. Each step is
timed and every wait is bounded. Exit status 0 when every check passed, 1 otherwise.

Usage: make sam-local   (or .venv/bin/python scripts/sam_local.py --help)
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

import boto3
import yaml  # type: ignore[import-untyped,unused-ignore]
from boto3.dynamodb.types import TypeDeserializer
from botocore.config import Config

from devkit.handlers import load_function
from devkit.paths import REPO_ROOT
from devkit.tables import seed_stock
from lambda_inbox.store import InboxRecord, Status, utc_iso
from lambda_inbox_tools.local.provision import provision
from lambda_inbox_tools.local.sam_env import (
    OFFLINE_CREDENTIALS,
    SHARED_VARIABLES,
    sam_env_vars,
    shared_variables,
)
from lambda_inbox_tools.local.stack import read_local_stack
from lambda_inbox_tools.local.template import Stack, TemplateError, read_stack
from lambda_inbox_tools.local.template import load_template as read_template
from lambda_inbox_tools.local.webhook import webhook_url
from lambda_inbox_tools.services.dynamodb_local import dynamodb_local_dir
from lambda_inbox_tools.services.offline import patched_environ, use_offline_aws

TEMPLATE = REPO_ROOT / "template.yaml"
EVENTS_DIR = REPO_ROOT / "events"
WORK_DIR = REPO_ROOT / ".aws-sam-local"
DEFAULT_IMAGE = "lambda-inbox/python:3.13-x86_64-local"
REGION = "us-east-1"
LOCAL_ARCHITECTURE = "x86_64"
#: PLATFORM of layers/inbox/Makefile for x86_64 wheels (its default is the arm64 one).
LAYER_PLATFORM = "manylinux2014_x86_64"
ELF_MACHINE_X86_64 = 62
#: Set by scripts/build-lambda-image.sh on the image, inherited by SAM CLI's containers.
IMAGE_LABEL = "org.lambda-inbox.image-recipe"
#: Declared in every function of the derived template so that `--env-vars` can set them.
LOCAL_VARIABLES = SHARED_VARIABLES
SEEDED_STOCK = 100
_DESERIALIZER = TypeDeserializer()

SAM_TIMEOUT = 300.0  # one `sam local invoke`, including the image build SAM does for the layer
BUILD_TIMEOUT = 900.0
IMAGE_TIMEOUT = 1800.0
SERVICE_TIMEOUT = 90.0
START_LAMBDA_TIMEOUT = 300.0
LOCAL_STACK_TIMEOUT = 600.0  # the demo workload through start-lambda, report included
INVOKE_TIMEOUT = 120.0


class SamLocalError(Exception):
    """A step failed; the message says which and why (meant for a person)."""


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


def free_port() -> int:
    """A TCP port free on every interface right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


def listening(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, port)) == 0


# ---------------------------------------------------------------------------- template


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """The template as plain data (intrinsics in their long form, which SAM CLI reads too)."""
    try:
        return read_template(path)
    except TemplateError as error:
        raise SamLocalError(str(error)) from None


def _local_architectures(node: Any) -> None:
    """arm64 -> x86_64 in every Architectures / CompatibleArchitectures / BuildArchitecture."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("Architectures", "CompatibleArchitectures") and isinstance(value, list):
                node[key] = [LOCAL_ARCHITECTURE if item == "arm64" else item for item in value]
            elif key == "BuildArchitecture" and value == "arm64":
                node[key] = LOCAL_ARCHITECTURE
            else:
                _local_architectures(value)
    elif isinstance(node, list):
        for item in node:
            _local_architectures(item)


def _relocated(uri: Any, source_dir: Path, target_dir: Path) -> Any:
    """A local CodeUri/ContentUri made relative to the derived template's folder."""
    if not isinstance(uri, str) or "://" in uri:
        return uri
    return os.path.relpath((source_dir / uri).resolve(), target_dir.resolve())


def derive_local_template(
    template: Mapping[str, Any], *, source_dir: Path, target_dir: Path
) -> dict[str, Any]:
    """The template `sam local` runs here: functions and layers on x86_64 (arm64 would need
    emulation), code paths valid from `target_dir`, and `LOCAL_VARIABLES` declared (empty) in
    every function's environment, so that an `--env-vars` file can set them."""
    derived: dict[str, Any] = copy.deepcopy(dict(template))
    _local_architectures(derived)
    function_globals = derived.get("Globals", {}).get("Function", {})
    if "CodeUri" in function_globals:
        function_globals["CodeUri"] = _relocated(
            function_globals["CodeUri"], source_dir, target_dir
        )
    for logical_id, resource in derived["Resources"].items():
        kind = resource.get("Type")
        properties = resource.setdefault("Properties", {})
        if kind == "AWS::Serverless::LayerVersion" and "ContentUri" in properties:
            properties["ContentUri"] = _relocated(properties["ContentUri"], source_dir, target_dir)
        if kind != "AWS::Serverless::Function":
            continue
        if "CodeUri" in properties:
            properties["CodeUri"] = _relocated(properties["CodeUri"], source_dir, target_dir)
        variables = properties.setdefault("Environment", {}).setdefault("Variables", {})
        if not isinstance(variables, dict):
            raise SamLocalError(
                f"{logical_id}: Environment.Variables is not a plain mapping; "
                "cannot declare the local endpoint variables"
            )
        for name in LOCAL_VARIABLES:
            variables.setdefault(name, "")
    return derived


def write_local_template(derived: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        "# Generated by scripts/sam_local.py from template.yaml for `sam local` on this machine\n"
        "# (x86_64, local endpoint variables declared). Do not edit, do not deploy.\n"
    )
    path.write_text(header + yaml.safe_dump(dict(derived), sort_keys=False, width=100))


@dataclass(frozen=True)
class LocalFunction:
    logical_id: str
    code_dir: str  # the name of its CodeUri folder, e.g. "order_events"
    variables: Mapping[str, Any]  # Globals and own environment variables, as in the template


def template_functions(template: Mapping[str, Any]) -> list[LocalFunction]:
    """The template's `AWS::Serverless::Function`s in template order."""
    global_variables = (
        template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    )
    functions = []
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        properties = resource.get("Properties", {})
        code_uri = properties.get("CodeUri") or template.get("Globals", {}).get("Function", {}).get(
            "CodeUri", ""
        )
        own = properties.get("Environment", {}).get("Variables", {})
        functions.append(
            LocalFunction(
                logical_id=logical_id,
                code_dir=Path(str(code_uri)).name,
                variables={**global_variables, **own},
            )
        )
    return functions


# ---------------------------------------------------------------------------- events


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def match_events(
    functions: Sequence[LocalFunction], event_files: Iterable[Path]
) -> tuple[dict[str, list[Path]], dict[Path, str]]:
    """Which sample events each function gets.

    `<source>-<subject>-<case>.json` goes to the function whose code folder has `<subject>` as one
    of its `_`-separated words, singular or plural: `sqs-order-single.json` and
    `sqs-order-poison.json` to `functions/order_events`, `msk-payment-single.json` and
    `sqs-payment-replay.json` to `functions/payment_events`. Returns the files per function (every
    function present, in template order; files sorted by name) and the files that match no
    function, or several, with the reason.
    """
    matched: dict[str, list[Path]] = {function.logical_id: [] for function in functions}
    unmatched: dict[Path, str] = {}
    for path in sorted(event_files, key=lambda item: item.name):
        parts = path.stem.split("-")
        if len(parts) < 2:
            unmatched[path] = "name is not <source>-<subject>-<case>.json"
            continue
        subject = _singular(parts[1])
        hits = [
            function
            for function in functions
            if subject in {_singular(word) for word in function.code_dir.split("_")}
        ]
        if len(hits) == 1:
            matched[hits[0].logical_id].append(path)
        elif not hits:
            unmatched[path] = f"no function's code folder names '{subject}'"
        else:
            names = ", ".join(function.logical_id for function in hits)
            unmatched[path] = f"'{subject}' names several functions ({names})"
    return matched, unmatched


def sample_event_files(events_dir: Path = EVENTS_DIR) -> list[Path]:
    return sorted(events_dir.glob("*.json"))


def record_payloads(event: Mapping[str, Any]) -> list[bytes]:
    """The message bodies of an SQS event (`Records[].body`) or the record values of a Kafka
    event (`records{}[].value`, base64, in offset order per partition)."""
    if isinstance(event.get("Records"), list):
        return [str(record.get("body", "")).encode() for record in event["Records"]]
    if isinstance(event.get("records"), dict):
        return [
            base64.b64decode(record.get("value") or "")
            for partition in event["records"].values()
            for record in sorted(partition, key=lambda item: int(item.get("offset", 0)))
        ]
    return []


def is_batch_event(event: Mapping[str, Any]) -> bool:
    return isinstance(event.get("Records"), list) or isinstance(event.get("records"), dict)


# ---------------------------------------------------------------------------- local services


def boto_client(service: str, endpoint: str, *, read_timeout: float = 60, attempts: int = 3) -> Any:
    """A client of its own session for a local endpoint (fake credentials, bounded waits)."""
    session: Any = boto3.session.Session()
    return session.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=OFFLINE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=OFFLINE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        config=Config(
            connect_timeout=5,
            read_timeout=read_timeout,
            retries={"max_attempts": attempts, "mode": "standard"},
        ),
    )


def bridge_address() -> str:
    """The host's address on the default docker bridge (docker0), where containers reach it."""
    try:
        shown_addr = subprocess.run(
            ["ip", "-4", "-o", "addr", "show", "docker0"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        shown_addr = ""
    found = re.search(r"\binet (\d+\.\d+\.\d+\.\d+)/", shown_addr)
    if found:
        return found.group(1)
    try:
        gateway = subprocess.run(
            [
                "docker",
                "network",
                "inspect",
                "bridge",
                "--format",
                "{{(index .IPAM.Config 0).Gateway}}",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        gateway = ""
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", gateway):
        return gateway
    raise SamLocalError(
        "no docker bridge address (docker0 has no IPv4 address and the bridge network has no "
        "gateway): the containers could not reach the local services"
    )


@dataclass(frozen=True)
class WebhookCall:
    idempotency_key: str | None
    body: Any  # the JSON body, or the raw text when it is not JSON


class WebhookReceiver:
    """A webhook for the functions that post to one (`NOTIFY_WEBHOOK_URL`): answers every POST
    with 202 and records it by path (one path per phase) and `Idempotency-Key` header."""

    def __init__(self, host: str) -> None:
        self.host = host
        self._lock = threading.Lock()
        self._calls: dict[str, list[WebhookCall]] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", errors="replace")
                try:
                    body: Any = json.loads(raw)
                except json.JSONDecodeError:
                    body = raw
                receiver.record(self.path, WebhookCall(self.headers.get("Idempotency-Key"), body))
                answer = b'{"accepted": true}'
                self.send_response(202)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the calls are checked and summarised instead

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="webhook receiver", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
        say(f"stopped the webhook receiver on {self.host}:{self.port}")

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}/{path}"

    def record(self, path: str, call: WebhookCall) -> None:
        with self._lock:
            self._calls.setdefault(path.lstrip("/"), []).append(call)

    def calls(self, path: str) -> list[WebhookCall]:
        with self._lock:
            return list(self._calls.get(path, []))


def start_webhook_receiver(processes: Processes, host: str) -> WebhookReceiver:
    receiver = WebhookReceiver(host)
    receiver.start()
    processes.on_stop("webhook receiver", receiver.stop)
    probe = urllib.request.Request(receiver.url("probe"), data=b"{}", method="POST")
    with urllib.request.urlopen(probe, timeout=5) as answer:
        if answer.status != 202:
            raise SamLocalError(f"the webhook receiver answered HTTP {answer.status}")
    say(f"webhook receiver answers on {host}:{receiver.port} (202 to every POST)")
    return receiver


@dataclass(frozen=True)
class Services:
    host: str  # where the containers reach the host (the docker bridge address)
    dynamodb_port: int
    sqs_port: int
    webhook: WebhookReceiver

    @property
    def dynamodb_for_containers(self) -> str:
        return f"http://{self.host}:{self.dynamodb_port}"

    @property
    def dynamodb_for_host(self) -> str:
        return f"http://127.0.0.1:{self.dynamodb_port}"

    @property
    def sqs(self) -> str:
        return f"http://{self.host}:{self.sqs_port}"


JAVA_DYNAMODB_LOCAL = ("-Djava.library.path=DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar")


def start_dynamodb_local(processes: Processes, logs: Path, host: str) -> int:
    home = dynamodb_local_dir()
    if not (home / "DynamoDBLocal.jar").is_file() or not (home / "DynamoDBLocal_lib").is_dir():
        raise SamLocalError(f"DynamoDB Local is not in {home}: run `make dynamodb-local`")
    java = shutil.which("java")
    if java is None:
        raise SamLocalError("DynamoDB Local needs Java 17 or later as `java` on PATH")
    port = free_port()
    started = processes.start(
        "DynamoDB Local",
        # All interfaces (it has no option to choose one); -sharedDb: one database whatever the
        # credentials and region of the caller, so the containers see the tables created here.
        [java, *JAVA_DYNAMODB_LOCAL, "-inMemory", "-sharedDb", "-port", str(port)],
        cwd=home,
        log=logs / "dynamodb-local.log",
    )
    for address in ("127.0.0.1", host):
        probe = boto_client("dynamodb", f"http://{address}:{port}", read_timeout=5, attempts=1)
        took = wait_until(
            f"DynamoDB Local answers on {address}:{port}",
            lambda: probe.list_tables(Limit=1),  # noqa: B023 (called before the next iteration)
            timeout=SERVICE_TIMEOUT,
            process=started,
        )
        say(f"DynamoDB Local answers on {address}:{port} ({took:.1f} s)")
    return port


def start_moto_server(processes: Processes, logs: Path, host: str) -> int:
    moto_server = Path(sys.executable).parent / "moto_server"
    if not moto_server.is_file():
        raise SamLocalError(f"{moto_server} is missing: run `make venv` (moto[server])")
    port = free_port()
    started = processes.start(
        "moto server (SQS)",
        # On the bridge address only: reachable from the containers and from this host.
        [str(moto_server), "-H", host, "-p", str(port)],
        log=logs / "moto-server.log",
    )
    probe = boto_client("sqs", f"http://{host}:{port}", read_timeout=5, attempts=1)
    took = wait_until(
        f"moto server answers on {host}:{port}",
        lambda: probe.list_queues(),
        timeout=SERVICE_TIMEOUT,
        process=started,
    )
    say(f"moto server answers on {host}:{port} ({took:.1f} s)")
    return port


@dataclass
class LocalStack:
    """The tables and queues of one phase, and the environment each function gets."""

    prefix: str
    tables: dict[str, str] = field(default_factory=dict)  # logical id -> table name
    queues: dict[str, str] = field(default_factory=dict)  # logical id -> queue URL
    variables: dict[str, dict[str, str]] = field(default_factory=dict)  # function -> variables
    #: Messages a seed arranged to reach a dead-letter queue besides the functions' own poison
    #: (the reaper's dead letters), by queue URL.
    extra_dead_letters: Counter[str] = field(default_factory=Counter)

    def variable(self, function: str, name: str) -> str:
        return self.variables[function][name]


def phase_stack(
    name: str, services: Services, dynamodb: Any, sqs: Any, parameters: Mapping[str, str]
) -> LocalStack:
    """The tables and queues of template.yaml created for one phase, named `<name>-<LogicalId>`
    by the local stack's own template reader (`lambda_inbox_tools.local.template`), with the template's
    visibility timeouts; the functions' environment resolved against them."""
    try:
        spec = read_stack(
            TEMPLATE, stack_name=name, parameters=parameters, sqs_endpoint=services.sqs
        )
    except TemplateError as error:
        raise SamLocalError(str(error)) from None
    provision(spec, dynamodb=dynamodb, sqs=sqs, kafka_bootstrap=None, scale=1.0)
    return stack_of(name, spec)


def stack_of(name: str, spec: Stack) -> LocalStack:
    return LocalStack(
        prefix=name,
        tables={table.logical_id: table.name for table in spec.tables},
        queues={queue.logical_id: queue.url for queue in spec.queues},
        variables={function.logical_id: dict(function.environment) for function in spec.functions},
    )


def write_env_vars(content: Mapping[str, Mapping[str, str]], path: Path) -> Path:
    """The `--env-vars` file (`lambda_inbox_tools.local.sam_env`): endpoints and offline credentials
    for every function, table names and queue URLs per function."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=2) + "\n")
    return path


# ---------------------------------------------------------------------------- invocations


@dataclass(frozen=True)
class Invocation:
    function: str
    event: Path
    response: Any
    seconds: float
    function_error: str | None = None
    report: str = ""


def show_invocation(invocation: Invocation) -> None:
    report = f"  [{invocation.report}]" if invocation.report else ""
    error = f" FunctionError={invocation.function_error}" if invocation.function_error else ""
    say(
        f"{invocation.function} <- {invocation.event.name} ({invocation.seconds:.2f} s){error}{report}"
    )
    say(f"  response: {json.dumps(invocation.response, separators=(',', ':'))}")


def response_problem(invocation: Invocation, event: Mapping[str, Any]) -> str | None:
    """What is wrong with a response, or None. Every function must answer without an error; a
    batch (SQS, Kafka) event of events/ must get `{"batchItemFailures": []}` (events/README.md:
    poison and duplicates are not failures)."""
    response = invocation.response
    where = f"{invocation.function} <- {invocation.event.name}"
    if invocation.function_error or (
        isinstance(response, dict) and ("errorType" in response or "errorMessage" in response)
    ):
        return f"{where}: the function failed: {json.dumps(response)}"
    if is_batch_event(event) and (
        not isinstance(response, dict) or response.get("batchItemFailures") != []
    ):
        return f'{where}: expected {{"batchItemFailures": []}}, got {json.dumps(response)}'
    return None


@dataclass(frozen=True)
class SamCli:
    executable: Path
    env: Mapping[str, str]
    image_args: tuple[str, ...]  # --skip-pull-image --invoke-image IMAGE, or nothing


def sam_environment(python313_bin: Path) -> dict[str, str]:
    """SAM CLI's environment: no AWS settings at all (credentials would cost an STS lookup per
    command, several seconds offline), no telemetry, Python 3.13 first on PATH for `sam build`.
    The containers get fake credentials from the --env-vars file instead."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env.update(
        SAM_CLI_TELEMETRY="0",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        PATH=f"{python313_bin}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return env


def sam_local_invoke(
    sam: SamCli, template: Path, function: str, event: Path, env_vars: Path, logs: Path
) -> Invocation:
    log = logs / f"invoke-{function}-{event.stem}.log"
    argv = [str(sam.executable), "local", "invoke", function]
    argv += ["--template-file", str(template), "--event", str(event)]
    argv += ["--env-vars", str(env_vars), *sam.image_args, "--region", REGION]
    began = time.monotonic()
    try:
        done = subprocess.run(
            argv,
            cwd=REPO_ROOT,
            env=dict(sam.env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SAM_TIMEOUT,
        )
    except subprocess.TimeoutExpired as error:
        raise SamLocalError(
            f"sam local invoke {function} -e {event.name}: no result after {SAM_TIMEOUT:.0f} s"
        ) from error
    seconds = time.monotonic() - began
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"$ {' '.join(argv)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    if done.returncode != 0:
        raise SamLocalError(
            f"sam local invoke {function} -e {event.name}: exit status {done.returncode}\n"
            f"{tail(log)}"
        )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    try:
        response = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError as error:
        raise SamLocalError(
            f"sam local invoke {function} -e {event.name}: the response is not JSON: "
            f"{lines[-1][:500]!r} (log {shown(log)})"
        ) from error
    reports = [line for line in done.stderr.splitlines() if line.startswith("REPORT ")]
    report = re.sub(r"^REPORT RequestId: \S+\s*", "", reports[-1]).strip() if reports else ""
    report = re.sub(r"\s+", " ", report)
    return Invocation(function, event, response, seconds, report=report)


# ---------------------------------------------------------------------------- table checks


@dataclass(frozen=True)
class CheckContext:
    function: str
    stack: LocalStack
    events: list[Mapping[str, Any]]  # in invocation order
    dynamodb: Any
    sqs: Any
    webhook: WebhookReceiver
    responses: list[Any] = field(default_factory=list)  # the function's, in invocation order


def scan_all(client: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items.extend(page["Items"])
    return items


def plain(item: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB item with its attribute values unwrapped (whole numbers as int)."""
    values = {name: _DESERIALIZER.deserialize(value) for name, value in item.items()}
    return {
        name: int(value) if isinstance(value, Decimal) and value == int(value) else value
        for name, value in values.items()
    }


@functools.cache
def payload_model(code_dir: str, class_name: str) -> Any:
    """The payload model `class_name` of functions/<code_dir>/app.py: the function's own
    validation decides what is poison. The module reads table names from its environment when
    imported: placeholders are set for the import only (credentials and region are the fake
    ones `main` set for this process)."""
    with patched_environ({"INBOX_TABLE": "unused", "DOMAIN_TABLE": "unused"}):
        return getattr(load_function(code_dir), class_name)


def parse_payloads(model: Any, events: Iterable[Mapping[str, Any]]) -> tuple[list[Any], int]:
    """The payloads of the events that the model accepts, in delivery order, and how many
    records it rejects (poison)."""
    valid, poison = [], 0
    for event in events:
        for raw in record_payloads(event):
            try:
                valid.append(model.model_validate_json(raw))
            except ValueError:  # pydantic's ValidationError is a ValueError
                poison += 1
    return valid, poison


def queue_depth(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def check_dead_letters(context: CheckContext, poison: int) -> tuple[list[str], str]:
    """Every poison record was dead-lettered once."""
    url = context.stack.variables[context.function].get("DEAD_LETTER_QUEUE_URL")
    if url is None:
        return [], "no DEAD_LETTER_QUEUE_URL: dead letters not checked"
    depth = queue_depth(context.sqs, url)
    extra = context.stack.extra_dead_letters[url]
    expected = poison + extra
    reaped = f" + {extra} from the reaper" if extra else ""
    problems = []
    if depth != expected:
        problems.append(
            f"dead-letter queue holds {depth} messages, expected {expected} "
            f"({poison} poison record(s){reaped})"
        )
    return problems, (f"dead-letter queue: {depth} message(s) ({poison} poison{reaped})")


def seed_orders(context: CheckContext) -> None:
    """Stock for every SKU the order events name (`SEEDED_STOCK` each)."""
    model = payload_model("order_events", "OrderPlaced")
    orders, _ = parse_payloads(model, context.events)
    skus = sorted({line.sku for order in orders for line in order.lines})
    table = context.stack.variable(context.function, "DOMAIN_TABLE")
    seed_stock(context.dynamodb, table, dict.fromkeys(skus, SEEDED_STOCK))


def check_orders(context: CheckContext) -> list[str]:
    """order-events (docs/architecture.md, the example application): replay the valid orders in delivery order against the
    seeded stock (a duplicate event_id or an order_id seen before changes nothing) and compare
    the result with the domain table: one SHIPMENT or REJECTION per order, stock reserved exactly
    once (available + reserved = seeded, reserved = the quantities of the shipments)."""
    model = payload_model("order_events", "OrderPlaced")
    orders, poison = parse_payloads(model, context.events)
    available: dict[str, int] = {line.sku: SEEDED_STOCK for order in orders for line in order.lines}
    expected_orders: dict[str, str] = {}
    seen_events: set[str] = set()
    for order in orders:
        if order.event_id in seen_events or order.order_id in expected_orders:
            continue
        seen_events.add(order.event_id)
        needed: dict[str, int] = order.quantities()
        if all(available.get(sku, 0) >= qty for sku, qty in needed.items()):
            for sku, qty in needed.items():
                available[sku] -= qty
            expected_orders[order.order_id] = "SHIPMENT"
        else:
            expected_orders[order.order_id] = "REJECTION"

    table = context.stack.variable(context.function, "DOMAIN_TABLE")
    items = [plain(item) for item in scan_all(context.dynamodb, table)]
    problems: list[str] = []
    actual_orders: dict[str, list[str]] = {}
    shipped: Counter[str] = Counter()
    stock: dict[str, dict[str, Any]] = {}
    for item in items:
        pk, sk = str(item["pk"]), str(item["sk"])
        if pk.startswith("ORDER#"):
            actual_orders.setdefault(pk.removeprefix("ORDER#"), []).append(sk)
            if sk == "SHIPMENT":
                for line in item.get("lines", []):
                    shipped[str(line["sku"])] += int(line["qty"])
        elif pk.startswith("SKU#") and sk == "STOCK":
            stock[pk.removeprefix("SKU#")] = item
    for order_id in sorted(set(expected_orders) | set(actual_orders)):
        want, got = expected_orders.get(order_id), sorted(actual_orders.get(order_id, []))
        if [want] != got:
            problems.append(f"order {order_id}: expected {want or 'nothing'}, table has {got}")
    for sku, left in sorted(available.items()):
        stock_item = stock.get(sku)
        if stock_item is None:
            problems.append(f"stock {sku}: no SKU#{sku}/STOCK item")
            continue
        have, reserved = int(stock_item["available"]), int(stock_item["reserved"])
        if (have, reserved) != (left, SEEDED_STOCK - left) or reserved != shipped[sku]:
            problems.append(
                f"stock {sku}: available {have}, reserved {reserved}; expected {left} and "
                f"{SEEDED_STOCK - left}, shipments hold {shipped[sku]}"
            )
    dead_letter_problems, dead_letters = check_dead_letters(context, poison)
    if problems or dead_letter_problems:
        raise SamLocalError(
            "order-events tables:\n  " + "\n  ".join(problems + dead_letter_problems)
        )
    statuses = Counter(expected_orders.values())
    rejected = sorted(order for order, status in expected_orders.items() if status == "REJECTION")
    return [
        f"orders: {statuses['SHIPMENT']} shipped, {statuses['REJECTION']} rejected "
        f"({', '.join(rejected) or 'none'}), one record per order",
        "stock (available/reserved, reserved exactly once): "
        + ", ".join(
            f"{sku} {int(stock[sku]['available'])}/{int(stock[sku]['reserved'])}"
            for sku in sorted(available)
        ),
        dead_letters,
    ]


def check_payments(context: CheckContext) -> list[str]:
    """payment-events (docs/architecture.md, the example application): one PAYMENT item per distinct payment of the events
    (first event_id wins; a duplicate event_id or a second event for a payment changes nothing),
    and every customer's BALANCE is the sum and the count of its PAYMENT items."""
    model = payload_model("payment_events", "PaymentCaptured")
    payments, poison = parse_payloads(model, context.events)
    expected: dict[tuple[str, str], int] = {}
    seen_events: set[str] = set()
    recorded: set[str] = set()
    for payment in payments:
        if payment.event_id in seen_events or payment.payment_id in recorded:
            continue
        seen_events.add(payment.event_id)
        recorded.add(payment.payment_id)
        expected[(payment.customer_id, payment.payment_id)] = payment.amount_cents

    table = context.stack.variable(context.function, "DOMAIN_TABLE")
    items = [plain(item) for item in scan_all(context.dynamodb, table)]
    actual: dict[tuple[str, str], int] = {}
    balances: dict[str, dict[str, Any]] = {}
    for item in items:
        pk, sk = str(item["pk"]), str(item["sk"])
        if not pk.startswith("CUSTOMER#"):
            continue
        customer = pk.removeprefix("CUSTOMER#")
        if sk.startswith("PAYMENT#"):
            actual[(customer, sk.removeprefix("PAYMENT#"))] = int(item["amount_cents"])
        elif sk == "BALANCE":
            balances[customer] = item
    problems = []
    for key in sorted(set(expected) | set(actual)):
        if expected.get(key) != actual.get(key):
            problems.append(
                f"payment {key[1]} of {key[0]}: expected {expected.get(key)}, table has "
                f"{actual.get(key)}"
            )
    sums: dict[str, tuple[int, int]] = {}
    for (customer, _), amount in actual.items():
        total, count = sums.get(customer, (0, 0))
        sums[customer] = (total + amount, count + 1)
    for customer in sorted(set(sums) | set(balances)):
        balance: Mapping[str, Any] = balances.get(customer) or {}
        got = (int(balance.get("balance_cents", 0)), int(balance.get("payments", 0)))
        if got != sums.get(customer, (0, 0)):
            problems.append(
                f"balance of {customer}: {got[0]} cents / {got[1]} payments, its PAYMENT items "
                f"sum to {sums.get(customer, (0, 0))}"
            )
    dead_letter_problems, dead_letters = check_dead_letters(context, poison)
    if problems or dead_letter_problems:
        raise SamLocalError(
            "payment-events tables:\n  " + "\n  ".join(problems + dead_letter_problems)
        )
    return [
        f"payments: {len(actual)} recorded once each, {len(balances)} balances equal to the sum "
        "of their payments: "
        + ", ".join(
            f"{customer} {sums[customer][0]}/{sums[customer][1]}" for customer in sorted(sums)
        ),
        dead_letters,
    ]


def check_notifications(context: CheckContext) -> list[str]:
    """customer-notifications (docs/architecture.md, the example application; leased mode): for every distinct event_id of the
    valid notifications, one NOTIFICATION item (`SENT`, the first delivery's order and template)
    and exactly one webhook call carrying `Idempotency-Key: <event_id>` and the notification's
    body, whatever the duplicates in the batches; no call for poison,
    no call under any other key."""
    model = payload_model("customer_notifications", "CustomerNotification")
    notifications, poison = parse_payloads(model, context.events)
    expected: dict[str, Any] = {}
    for notification in notifications:
        expected.setdefault(notification.event_id, notification)

    table = context.stack.variable(context.function, "DOMAIN_TABLE")
    items = [plain(item) for item in scan_all(context.dynamodb, table)]
    actual: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        sk = str(item["sk"])
        if str(item["pk"]).startswith("CUSTOMER#") and sk.startswith("NOTIFICATION#"):
            actual.setdefault(sk.removeprefix("NOTIFICATION#"), []).append(item)
    problems = []
    for event_id in sorted(set(expected) | set(actual)):
        want, got = expected.get(event_id), actual.get(event_id, [])
        if want is None:
            problems.append(f"NOTIFICATION#{event_id}: no valid notification has this event_id")
            continue
        wanted = {
            "pk": f"CUSTOMER#{want.customer_id}",
            "status": "SENT",
            "order_id": want.order_id,
            "template": want.template,
        }
        if len(got) != 1 or any(got[0].get(name) != value for name, value in wanted.items()):
            problems.append(f"NOTIFICATION#{event_id}: expected one item {wanted}, table has {got}")

    path = context.stack.variable(context.function, "NOTIFY_WEBHOOK_URL").rsplit("/", 1)[-1]
    calls = context.webhook.calls(path)
    per_key = Counter(call.idempotency_key for call in calls)
    for key in sorted(set(expected) | {str(key) for key in per_key}, key=str):
        if per_key.get(key, 0) != (1 if key in expected else 0):
            problems.append(
                f"webhook: {per_key.get(key, 0)} call(s) with Idempotency-Key {key!r}, expected "
                f"{1 if key in expected else 0}"
            )
    for call in calls:
        want = expected.get(call.idempotency_key or "")
        if want is None:
            continue
        body = {"customer_id": want.customer_id, "order_id": want.order_id}
        body["template"] = want.template
        if call.body != body:
            problems.append(
                f"webhook call {call.idempotency_key}: body {call.body!r}, expected {body}"
            )
    dead_letter_problems, dead_letters = check_dead_letters(context, poison)
    if problems or dead_letter_problems:
        raise SamLocalError(
            "customer-notifications tables and webhook:\n  "
            + "\n  ".join(problems + dead_letter_problems)
        )
    return [
        f"notifications: {len(actual)} NOTIFICATION item(s), one per event_id "
        f"({', '.join(sorted(actual)) or 'none'})",
        f"webhook: {len(calls)} call(s) for {len(expected)} event_id(s), each once with its "
        "event_id as Idempotency-Key",
        dead_letters,
    ]


#: The record the reaper's seed leaves behind: a notification claimed by a delivery that never
#: finished, its lease expired long ago (more than the grace), its message never coming back.
STUCK_CONSUMER = "customer-notifications"
STUCK_KEY = "evt-notify-0900"
STUCK_PAYLOAD = {
    "event_id": STUCK_KEY,
    "customer_id": "cust-009",
    "order_id": "ord-1900",
    "template": "order-shipped",
}


def _reaper_queue(context: CheckContext, consumer: str) -> str:
    queues = json.loads(context.stack.variable(context.function, "INBOX_REAPER_DLQ_URLS"))
    url = queues.get(consumer)
    if not isinstance(url, str) or not url:
        raise SamLocalError(f"INBOX_REAPER_DLQ_URLS has no queue for {consumer}: {queues}")
    return url


def seed_reaper(context: CheckContext) -> None:
    """One stuck `IN_PROGRESS` lease of customer-notifications, expired an hour more than the
    reaper's grace ago: the reaper must mark it FAILED and dead-letter it to that consumer's DLQ."""
    grace = float(
        context.stack.variables[context.function].get("INBOX_REAPER_LEASE_GRACE_SECONDS", "900")
    )
    expired = time.time() - grace - 3600
    body = json.dumps(STUCK_PAYLOAD, separators=(",", ":")).encode()
    record = InboxRecord(
        consumer=STUCK_CONSUMER,
        message_key=STUCK_KEY,
        status=Status.IN_PROGRESS,
        source="arn:aws:sqs:us-east-1:123456789012:lambda-inbox-notifications",
        delivery_id="00000000-0000-4000-8000-000000000900",
        attempts=1,
        lease_expires_at=expired,
        owner="a-delivery-that-never-finished",
        payload_snapshot=body,
        open_since=utc_iso(expired),
    )
    table = context.stack.variable(context.function, "INBOX_TABLE")
    context.dynamodb.put_item(TableName=table, Item=record.to_item())
    context.stack.extra_dead_letters[_reaper_queue(context, STUCK_CONSUMER)] += 1


def check_reaper(context: CheckContext) -> list[str]:
    """inbox-reaper (docs/concepts.md, the reaper): every response is a JSON object with integer `reaped`,
    `dead_lettered` and `open`; over all runs the seeded stuck lease was reaped and dead-lettered
    exactly once (the first run; later runs find nothing to do); the record is FAILED
    `lease_expired` with `dead_lettered_at`; its payload is in the consumer's DLQ; and the last
    run's `open` equals the open records of the inbox table."""
    problems = []
    summaries = []
    for response in context.responses:
        fields = (
            {name: response.get(name) for name in ("reaped", "dead_lettered", "open")}
            if (isinstance(response, dict))
            else {}
        )
        if not fields or not all(
            isinstance(value, int) and not isinstance(value, bool) for value in fields.values()
        ):
            problems.append(f"response without integer reaped, dead_lettered, open: {response!r}")
            continue
        summaries.append(fields)
    if summaries:
        if summaries[0]["reaped"] != 1 or summaries[0]["dead_lettered"] != 1:
            problems.append(f"first run: expected reaped 1 and dead_lettered 1, got {summaries[0]}")
        for later in summaries[1:]:
            if later["reaped"] or later["dead_lettered"]:
                problems.append(f"a later run reaped or dead-lettered again: {later}")

    table = context.stack.variable(context.function, "INBOX_TABLE")
    records = [InboxRecord.from_item(item) for item in scan_all(context.dynamodb, table)]
    stuck = next(
        (r for r in records if (r.consumer, r.message_key) == (STUCK_CONSUMER, STUCK_KEY)), None
    )
    if stuck is None:
        problems.append(f"the seeded record {STUCK_CONSUMER}#{STUCK_KEY} is gone")
    elif (stuck.status, stuck.error_code) != (Status.FAILED, "lease_expired") or not (
        stuck.dead_lettered_at
    ):
        problems.append(
            f"{STUCK_CONSUMER}#{STUCK_KEY}: status {stuck.status.value}, error_code "
            f"{stuck.error_code}, dead_lettered_at {stuck.dead_lettered_at}; expected FAILED, "
            "lease_expired and a dead_lettered_at"
        )
    open_records = sum(1 for record in records if record.status.is_open)
    if summaries and summaries[-1]["open"] != open_records:
        problems.append(
            f"last run counted open {summaries[-1]['open']}, the table has {open_records} "
            "open records"
        )

    url = _reaper_queue(context, STUCK_CONSUMER)
    # A look without taking: visibility 0 leaves every message visible (and counted) as before.
    received = context.sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0, MessageAttributeNames=["All"]
    ).get("Messages", [])
    letters = [
        message
        for message in received
        if message.get("MessageAttributes", {}).get("inbox-message-key", {}).get("StringValue")
        == STUCK_KEY
    ]
    if len(letters) != 1 or json.loads(letters[0]["Body"]) != STUCK_PAYLOAD:
        problems.append(
            f"{shown_queue(url)}: expected one dead letter of {STUCK_KEY} with its payload, "
            f"found {[message.get('Body') for message in letters]}"
        )
    else:
        code = letters[0]["MessageAttributes"].get("inbox-error-code", {}).get("StringValue")
        if code != "lease_expired":
            problems.append(f"dead letter of {STUCK_KEY}: inbox-error-code {code!r}")
    if problems:
        raise SamLocalError("inbox-reaper:\n  " + "\n  ".join(problems))
    return [
        "runs: "
        + ", ".join(
            f"reaped {item['reaped']} dead_lettered {item['dead_lettered']} open {item['open']}"
            for item in summaries
        ),
        f"{STUCK_CONSUMER}#{STUCK_KEY} (lease expired > grace): FAILED lease_expired, "
        f"dead-lettered once to {shown_queue(url)}; {open_records} open record(s) in the table",
    ]


def shown_queue(url: str) -> str:
    return url.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Scenario:
    seed: Callable[[CheckContext], None] | None
    check: Callable[[CheckContext], list[str]]


#: Table checks per function code folder; other functions get their responses checked only.
SCENARIOS: dict[str, Scenario] = {
    "order_events": Scenario(seed=seed_orders, check=check_orders),
    "payment_events": Scenario(seed=None, check=check_payments),
    "customer_notifications": Scenario(seed=None, check=check_notifications),
    "inbox_reaper": Scenario(seed=seed_reaper, check=check_reaper),
}


# ---------------------------------------------------------------------------- the run


@dataclass
class Plan:
    functions: list[LocalFunction]
    events: dict[str, list[Path]]  # function logical id -> event files
    unmatched: dict[Path, str]
    warnings: list[str] = field(default_factory=list)

    def invocations(self) -> list[tuple[str, Path]]:
        return [(function, path) for function, paths in self.events.items() for path in paths]


def make_plan(template: Mapping[str, Any], event_files: Sequence[Path]) -> Plan:
    functions = template_functions(template)
    events, unmatched = match_events(functions, event_files)
    plan = Plan(functions, events, unmatched)
    for function in functions:
        paths = events[function.logical_id]
        names = ", ".join(path.name for path in paths) or "none"
        say(f"{function.logical_id} (functions/{function.code_dir}): {names}")
        if not paths:
            plan.warnings.append(f"{function.logical_id}: no sample events in events/, not invoked")
        elif function.code_dir not in SCENARIOS:
            plan.warnings.append(
                f"{function.logical_id}: responses checked, no table check for functions/"
                f"{function.code_dir} (add one to SCENARIOS in scripts/sam_local.py)"
            )
    for path, reason in unmatched.items():
        plan.warnings.append(f"events/{path.name}: not invoked: {reason}")
    for warning in plan.warnings:
        say(f"WARNING: {warning}")
    if not plan.invocations():
        raise SamLocalError("no function has sample events in events/: nothing to invoke")
    return plan


def run_checks(
    plan: Plan,
    stack: LocalStack,
    dynamodb: Any,
    sqs: Any,
    webhook: WebhookReceiver,
    *,
    seed: bool,
    invocations: Sequence[Invocation] = (),
) -> None:
    for function in plan.functions:
        scenario = SCENARIOS.get(function.code_dir)
        if scenario is None or not plan.events[function.logical_id]:
            continue
        events = [json.loads(path.read_text()) for path in plan.events[function.logical_id]]
        responses = [
            invocation.response
            for invocation in invocations
            if invocation.function == function.logical_id
        ]
        context = CheckContext(
            function.logical_id, stack, events, dynamodb, sqs, webhook, responses
        )
        if seed:
            if scenario.seed is not None:
                scenario.seed(context)
            continue
        for fact in scenario.check(context):
            say(f"{function.logical_id}: {fact}")


def check_responses(invocations: Sequence[Invocation]) -> None:
    problems = []
    for invocation in invocations:
        event = json.loads(invocation.event.read_text())
        problem = response_problem(invocation, event)
        if problem:
            problems.append(problem)
    if problems:
        raise SamLocalError("unexpected responses:\n  " + "\n  ".join(problems))
    say(f"all {len(invocations)} responses as expected")


def check_built_layers(template: Mapping[str, Any], build_dir: Path) -> None:
    """The layers' native extensions are x86_64 ELF files (not the arm64 default)."""
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != "AWS::Serverless::LayerVersion":
            continue
        extensions = sorted((build_dir / logical_id).rglob("*.so"))
        wrong = [
            path
            for path in extensions
            if int.from_bytes(path.read_bytes()[18:20], "little") != ELF_MACHINE_X86_64
        ]
        if wrong:
            raise SamLocalError(
                f"{logical_id}: native extensions not built for x86_64: "
                + ", ".join(shown(path) for path in wrong[:5])
            )
        say(f"{logical_id}: {len(extensions)} native extension(s), all x86_64")


def docker_version() -> str | None:
    """The engine's version when one answers, else None."""
    try:
        done = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = done.stdout.strip()
    return version if done.returncode == 0 and version and "<no value>" not in version else None


def ensure_docker_engine(processes: Processes, logs: Path) -> None:
    version = docker_version()
    if version:
        say(f"Docker engine {version} answers: used as it is (left running)")
        return
    if os.environ.get("DOCKER_HOST"):
        raise SamLocalError(f"DOCKER_HOST={os.environ['DOCKER_HOST']} does not answer")
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise SamLocalError("no dockerd on PATH (install Debian's docker.io)")
    started = processes.start(
        "dockerd",
        [dockerd, "--host", "unix:///var/run/docker.sock"],
        log=logs / "dockerd.log",
        stop_timeout=60,
    )
    try:
        took = wait_until(
            "the Docker engine answers",
            docker_version,
            timeout=SERVICE_TIMEOUT,
            process=started,
            interval=0.5,
        )
    except SamLocalError as error:
        raise SamLocalError(
            f"this machine cannot start containers, so `sam local` cannot run here: the Docker "
            f"engine did not start: {error}"
        ) from error
    say(f"Docker engine {docker_version()} ready in {took:.1f} s")


def check_containers_start(image: str, logs: Path) -> None:
    """A container of the image starts (otherwise this machine cannot run `sam local`, and the
    run stops here saying so) and its Python finds the runtime client and boto3."""
    try:
        run(
            ["docker", "run", "--rm", "--network", "bridge", "--entrypoint", "/bin/true", image],
            what=f"docker run {image}",
            timeout=120,
            log=logs / "container-check.log",
        )
    except SamLocalError as error:
        raise SamLocalError(
            f"this machine cannot start containers, so `sam local` cannot run here: {error}"
        ) from error
    probe = ("-e", "PYTHONPATH=/var/runtime", "--entrypoint", "python3.13", image, "-c")
    run(
        ["docker", "run", "--rm", *probe, "import awslambdaric, boto3"],
        what=f"{image} lacks awslambdaric or boto3 (rebuild: scripts/build-lambda-image.sh --force)",
        timeout=120,
        log=logs / "container-check.log",
    )
    say(f"a container of {image} starts; its python3.13 imports awslambdaric and boto3")


def python313_bin() -> Path:
    """The bin/ folder of a Python 3.13 (scripts/find-python313.sh): `sam build` needs the
    template's runtime on PATH, and pip installs the image's cp313 wheels with it."""
    try:
        done = subprocess.run(
            ["bash", str(REPO_ROOT / "scripts" / "find-python313.sh")],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired as error:
        raise SamLocalError("scripts/find-python313.sh did not answer within 30 s") from error
    if done.returncode != 0 or not done.stdout.strip():
        raise SamLocalError(f"no Python 3.13 for sam build: {done.stderr.strip()}")
    return Path(done.stdout.strip().splitlines()[-1])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run the template's functions in containers with `sam local`, offline, and "
        "check what they did.",
    )
    parser.add_argument(
        "--image",
        default=os.environ.get("LAMBDA_IMAGE", DEFAULT_IMAGE),
        help=f"local Lambda image to build (once) and invoke with (default {DEFAULT_IMAGE})",
    )
    parser.add_argument(
        "--pull-images",
        action="store_true",
        help="use the official Lambda images, pulled by SAM CLI (needs registry access; Linux "
        "hosts, where containers reach the host at the docker0 address); no local image is built",
    )
    parser.add_argument(
        "--phase",
        choices=("all", "invoke", "start-lambda"),
        default="all",
        help="run both phases (default), only `sam local invoke` or only `start-lambda`",
    )
    parser.add_argument(
        "--messages",
        type=int,
        default=20,
        help="orders and payments the demo workload publishes through start-lambda (default 20)",
    )
    return parser.parse_args(argv)


def phase_invoke(plan: Plan, sam: SamCli, built: Path, services: Services) -> None:
    dynamodb = boto_client("dynamodb", services.dynamodb_for_host)
    sqs = boto_client("sqs", services.sqs)
    # The webhook's parameter is empty by default: the receiver instead.
    stack = phase_stack(
        "invoke", services, dynamodb, sqs, {"NotifyWebhookUrl": services.webhook.url("invoke")}
    )
    run_checks(plan, stack, dynamodb, sqs, services.webhook, seed=True)
    env_vars = write_env_vars(
        {
            "Parameters": shared_variables(
                dynamodb_endpoint=services.dynamodb_for_containers, sqs_endpoint=services.sqs
            ),
            **stack.variables,
        },
        WORK_DIR / "env-vars.invoke.json",
    )
    say(f"tables {', '.join(stack.tables.values())}; env vars {shown(env_vars)}")
    invocations = []
    for function, event in plan.invocations():
        invocation = sam_local_invoke(sam, built, function, event, env_vars, WORK_DIR / "logs")
        show_invocation(invocation)
        invocations.append(invocation)
    check_responses(invocations)
    run_checks(plan, stack, dynamodb, sqs, services.webhook, seed=False, invocations=invocations)


def lambda_containers(services: Services, *, running_only: bool) -> dict[str, dict[str, str]]:
    """SAM CLI's Lambda containers of this run (their environment points at this run's DynamoDB
    Local): container id -> environment variables."""
    argv = ["docker", "ps", "-q", "--filter", "label=sam.cli.container.type=lambda"]
    listed = run(
        argv if running_only else [*argv, "--all"], what="docker ps", timeout=30, capture=True
    ).stdout.split()
    if not listed:
        return {}
    inspected = json.loads(
        run(["docker", "inspect", *listed], what="docker inspect", timeout=30, capture=True).stdout
    )
    found = {}
    for container in inspected:
        pairs = [item.split("=", 1) for item in container["Config"]["Env"] if "=" in item]
        variables = {name: value for name, value in pairs}
        if variables.get("AWS_ENDPOINT_URL_DYNAMODB") == services.dynamodb_for_containers:
            found[str(container["Id"])] = variables
    return found


def remove_lambda_containers(services: Services) -> None:
    """Remove the Lambda containers of this run that SAM CLI left behind (it removes them itself
    when it stops normally)."""
    try:
        left = list(lambda_containers(services, running_only=False))
        if left:
            run(["docker", "rm", "--force", *left], what="docker rm", timeout=60, capture=True)
            say(f"removed {len(left)} Lambda container(s) SAM CLI left behind")
    except SamLocalError as error:
        say(f"could not remove leftover Lambda containers: {error}")


def remove_stale_containers() -> None:
    """Remove exited Lambda containers of the local image that an earlier, killed run left
    behind (SAM CLI's containers carry the image's recipe label); running ones are left alone."""
    filters = ["status=exited", "label=sam.cli.container.type=lambda", f"label={IMAGE_LABEL}"]
    listed = run(
        ["docker", "ps", "-q", "--all", *(f"--filter={item}" for item in filters)],
        what="docker ps",
        timeout=30,
        capture=True,
    ).stdout.split()
    if listed:
        run(["docker", "rm", *listed], what="docker rm", timeout=60, capture=True)
        say(f"removed {len(listed)} exited Lambda container(s) of an earlier run")


def remove_stale_images() -> None:
    """Remove the images earlier runs left behind: SAM CLI builds a new image with the layer
    on every run and leaves the previous one untagged (about 185 MB each); they carry the local
    image's recipe label. Images a container uses are kept."""
    filters = ["--filter", "dangling=true", "--filter", f"label={IMAGE_LABEL}"]
    done = run(
        ["docker", "image", "prune", "--force", *filters],
        what="docker image prune",
        timeout=120,
        capture=True,
    )
    reclaimed = re.search(r"Total reclaimed space: (.+)", done.stdout)
    if reclaimed and not reclaimed.group(1).strip().startswith("0B"):
        say(f"removed the untagged Lambda images of earlier runs ({reclaimed.group(1).strip()})")


def check_container_environments(
    env_vars: Mapping[str, Mapping[str, str]], services: Services
) -> None:
    """The warm containers of start-lambda got the values of the --env-vars file: SAM CLI drops
    the variables a function does not declare, and would otherwise pass its own credentials."""
    found = {
        variables.get("AWS_LAMBDA_FUNCTION_NAME", "?"): variables
        for variables in lambda_containers(services, running_only=True).values()
    }
    problems = []
    for function, own in env_vars.items():
        if function == "Parameters":
            continue
        env = found.get(function)
        if env is None:
            problems.append(f"{function}: no warm container of this run")
            continue
        expected = {**env_vars["Parameters"], **own}
        problems += [
            f"{function}: {name}={env.get(name)!r}, expected {value!r}"
            for name, value in expected.items()
            if env.get(name) != value
        ]
    if problems:
        raise SamLocalError("container environment:\n  " + "\n  ".join(problems))
    say(
        f"{len(found)} warm container(s): endpoints, offline credentials, tables and queues from "
        "the --env-vars file"
    )


def phase_start_lambda(
    sam: SamCli, built: Path, services: Services, processes: Processes, messages: int
) -> None:
    """`sam local start-lambda` with the tables and queues of the local stack in its --env-vars,
    driven by `lambda-inbox local --invoke-endpoint`: the stack's event source emulation and demo
    workload, every function invoked in its warm container. Passes when the demo's invariants
    hold (its exit status)."""
    webhook_port = free_port()
    stack = read_local_stack(
        TEMPLATE,
        sqs_endpoint=services.sqs,
        parameters={"NotifyWebhookUrl": webhook_url(services.host, webhook_port)},
    )
    document = sam_env_vars(
        stack, dynamodb_endpoint=services.dynamodb_for_containers, sqs_endpoint=services.sqs
    )
    env_vars = write_env_vars(document, WORK_DIR / "env-vars.start-lambda.json")
    say(f"the local stack's tables and queues ({stack.name}-*); env vars {shown(env_vars)}")
    port = free_port()
    argv = [str(sam.executable), "local", "start-lambda", "--template-file", str(built)]
    argv += ["--env-vars", str(env_vars), *sam.image_args, "--warm-containers", "EAGER"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--region", REGION]
    server = processes.start(
        "sam local start-lambda",
        argv,
        log=WORK_DIR / "logs" / "start-lambda.log",
        env=sam.env,
        # Ctrl-C is how SAM CLI expects to be stopped: it removes its warm containers.
        stop_signal=signal.SIGINT,
        stop_timeout=30,
    )
    took = wait_until(
        f"start-lambda listens on 127.0.0.1:{port}",
        lambda: listening("127.0.0.1", port),
        timeout=START_LAMBDA_TIMEOUT,
        process=server,
        interval=0.5,
    )
    say(f"start-lambda ready on 127.0.0.1:{port} in {took:.1f} s (warm containers: EAGER)")
    check_container_environments(document, services)
    local = [sys.executable, "-m", "lambda_inbox_tools.cli", "local"]
    local += ["--invoke-endpoint", f"http://127.0.0.1:{port}", "--template", str(TEMPLATE)]
    local += ["--dynamodb-endpoint", services.dynamodb_for_containers]
    local += ["--sqs-endpoint", services.sqs]
    local += ["--webhook-listen", f"{services.host}:{webhook_port}", "--messages", str(messages)]
    say("$ lambda-inbox " + " ".join(local[3:]))
    run(
        local,
        what="lambda-inbox local --invoke-endpoint (an invariant failed, or the run did not end)",
        timeout=LOCAL_STACK_TIMEOUT,
        # This checkout's library; a report wide enough to read in a CI log.
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "layers" / "inbox"), "COLUMNS": "120"},
    )
    processes.stop(server)


def run_all(args: argparse.Namespace, clock: Clock, processes: Processes) -> None:
    logs = WORK_DIR / "logs"
    with clock.step("host packages (apt: docker.io, debootstrap)"):
        wanted = ["dockerd"] if args.pull_images else ["dockerd", "debootstrap"]
        run(
            ["bash", str(REPO_ROOT / "scripts" / "install-sam-local-packages.sh"), *wanted],
            what="install docker.io / debootstrap",
            timeout=900,
        )
    with clock.step("Docker engine"):
        ensure_docker_engine(processes, logs)
    py313 = python313_bin()
    if args.pull_images:
        image_args: tuple[str, ...] = ()
        say("official images: pulled by SAM CLI, no local image")
    else:
        with clock.step(f"local Lambda image {args.image}"):
            env = dict(os.environ, PYTHON=str(py313 / "python3.13"), LAMBDA_IMAGE=args.image)
            run(
                ["bash", str(REPO_ROOT / "scripts" / "build-lambda-image.sh"), args.image],
                what="scripts/build-lambda-image.sh",
                timeout=IMAGE_TIMEOUT,
                env=env,
            )
            check_containers_start(args.image, logs)
            remove_stale_containers()
            remove_stale_images()
        image_args = ("--skip-pull-image", "--invoke-image", args.image)

    sam = SamCli(Path(sys.executable).parent / "sam", sam_environment(py313), image_args)
    if not sam.executable.is_file():
        raise SamLocalError(f"{sam.executable} is missing: run `make venv`")
    template = load_template()
    local_template = WORK_DIR / "template.yaml"
    build_dir = WORK_DIR / "build"
    with clock.step("derived template and sam build (x86_64)"):
        derived = derive_local_template(template, source_dir=REPO_ROOT, target_dir=WORK_DIR)
        write_local_template(derived, local_template)
        say(f"{shown(local_template)}: x86_64, {', '.join(LOCAL_VARIABLES)} declared")
        argv = [str(sam.executable), "build", "--template-file", str(local_template)]
        argv += ["--build-dir", str(build_dir), "--cache-dir", str(WORK_DIR / "cache"), "--cached"]
        run(
            argv,
            what="sam build of the derived template",
            timeout=BUILD_TIMEOUT,
            # layers/inbox/Makefile: PLATFORM ?= the arm64 wheels; make takes it from here.
            env={**sam.env, "PLATFORM": LAYER_PLATFORM},
            log=logs / "sam-build.log",
        )
        say(f"built into {shown(build_dir)} with Python 3.13 from {py313}")
        check_built_layers(derived, build_dir)
    built = build_dir / "template.yaml"

    with clock.step("local services: DynamoDB Local, moto (SQS), webhook receiver"):
        host = bridge_address()
        services = Services(
            host=host,
            dynamodb_port=start_dynamodb_local(processes, logs, host),
            sqs_port=start_moto_server(processes, logs, host),
            webhook=start_webhook_receiver(processes, host),
        )
        say(
            f"containers use {services.dynamodb_for_containers} (DynamoDB), {services.sqs} (SQS) "
            f"and {services.webhook.url('<phase>')} (webhook)"
        )
        # Before the engine stops: containers an interrupted `sam local` left behind.
        processes.on_stop("Lambda containers", lambda: remove_lambda_containers(services))

    with clock.step("functions and their sample events"):
        plan = make_plan(derived, sample_event_files())
    if args.phase in ("all", "invoke"):
        with clock.step("sam local invoke, each function with each of its events"):
            phase_invoke(plan, sam, built, services)
    if args.phase in ("all", "start-lambda"):
        with clock.step("sam local start-lambda (EAGER) driven by lambda-inbox local"):
            phase_start_lambda(sam, built, services, processes, args.messages)
    if plan.warnings:
        print("\n== warnings")
        for warning in plan.warnings:
            say(warning)


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # This process only talks to local endpoints: fake credentials, no profile, no ~/.aws files.
    # SAM CLI gets no AWS settings at all (sam_environment).
    use_offline_aws()
    signal.signal(signal.SIGTERM, _exit_on_signal)
    clock = Clock()
    processes = Processes()
    status = 1
    try:
        run_all(args, clock, processes)
        status = 0
    except SamLocalError as error:
        print(f"\nsam-local: FAILED: {error}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("\nsam-local: interrupted", file=sys.stderr, flush=True)
        status = 130
    finally:
        if processes.running:
            with clock.step("stop what this run started"):
                processes.stop_all()
        clock.summary()
    print(f"\nsam-local: {'OK' if status == 0 else 'FAILED'}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
