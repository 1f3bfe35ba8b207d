"""The services the containers reach at the docker bridge address: DynamoDB Local
(`-sharedDb`), a moto server for SQS, a webhook receiver; and the tables and queues of one phase,
created by the local stack's template reader."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from lambda_inbox_tools.local.provision import provision
from lambda_inbox_tools.local.sam_env import (
    OFFLINE_CREDENTIALS,
)
from lambda_inbox_tools.local.template import Stack, TemplateError, read_stack
from lambda_inbox_tools.local.webhook import serve_webhook
from lambda_inbox_tools.services.dynamodb_local import JAR_ARGUMENTS, dynamodb_local_dir
from lambda_inbox_tools.services.ports import free_port

from .processes import Processes, say, wait_until
from .settings import ANY_INTERFACE, REGION, SERVICE_TIMEOUT, TEMPLATE, SamLocalError

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
    """The invoke phase's webhook (`NOTIFY_WEBHOOK_URL`), on the local stack's one receiver
    (`serve_webhook`): answers every POST with 202 and records it with its `Idempotency-Key`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[WebhookCall] = []
        self.url = ""

    def answer(self, key: str, raw: bytes) -> int:
        text = raw.decode("utf-8", errors="replace")
        try:
            body: Any = json.loads(text)
        except json.JSONDecodeError:
            body = text
        with self._lock:
            self._calls.append(WebhookCall(key or None, body))
        return 202

    def calls(self) -> list[WebhookCall]:
        with self._lock:
            return list(self._calls)


def start_webhook_receiver(processes: Processes, host: str) -> WebhookReceiver:
    receiver = WebhookReceiver()
    serving = contextlib.ExitStack()
    receiver.url = serving.enter_context(serve_webhook(receiver.answer, host=host))
    processes.on_stop("webhook receiver", serving.close)
    say(f"webhook receiver answers on {receiver.url} (202 to every POST)")
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


def start_dynamodb_local(processes: Processes, logs: Path, host: str) -> int:
    home = dynamodb_local_dir()
    if not (home / "DynamoDBLocal.jar").is_file() or not (home / "DynamoDBLocal_lib").is_dir():
        raise SamLocalError(f"DynamoDB Local is not in {home}: run `make dynamodb-local`")
    java = shutil.which("java")
    if java is None:
        raise SamLocalError("DynamoDB Local needs Java 17 or later as `java` on PATH")
    port = free_port(ANY_INTERFACE)
    started = processes.start(
        "DynamoDB Local",
        # All interfaces (it has no option to choose one); -sharedDb: one database whatever the
        # credentials and region of the caller, so the containers see the tables created here.
        [java, *JAR_ARGUMENTS, "-inMemory", "-sharedDb", "-port", str(port)],
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
    port = free_port(ANY_INTERFACE)
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
class PhaseStack:
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
) -> PhaseStack:
    """The tables and queues of template.yaml created for one phase, named `<name>-<LogicalId>`
    by the local stack's own template reader (`lambda_inbox_tools.local.template`), with the template's
    visibility timeouts; the functions' environment resolved against them."""
    try:
        spec = read_stack(
            TEMPLATE, stack_name=name, parameters=parameters, sqs_endpoint=services.sqs
        )
    except TemplateError as error:
        raise SamLocalError(str(error)) from None
    provision(
        spec,
        dynamodb=dynamodb,
        sqs=sqs,
        kafka_bootstrap=None,
        scale=1.0,
        # The template's topic (shipment notifications) and its subscription, on the moto server.
        sns=boto_client("sns", services.sqs),
        events=boto_client("events", services.sqs),
    )
    return stack_of(name, spec)


def stack_of(name: str, spec: Stack) -> PhaseStack:
    return PhaseStack(
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
