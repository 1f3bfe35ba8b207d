"""`sam local invoke` of one function with one sample event, and what its response must be."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devkit.paths import REPO_ROOT

from .derived_template import is_batch_event
from .processes import say, shown, tail
from .settings import REGION, SAM_TIMEOUT, SamLocalError

# ---------------------------------------------------------------------------- invocations


@dataclass(frozen=True)
class SamInvocation:
    function: str
    event: Path
    response: Any
    seconds: float
    function_error: str | None = None
    report: str = ""


def show_invocation(invocation: SamInvocation) -> None:
    report = f"  [{invocation.report}]" if invocation.report else ""
    error = f" FunctionError={invocation.function_error}" if invocation.function_error else ""
    say(
        f"{invocation.function} <- {invocation.event.name} ({invocation.seconds:.2f} s){error}{report}"
    )
    say(f"  response: {json.dumps(invocation.response, separators=(',', ':'))}")


def response_problem(invocation: SamInvocation, event: Mapping[str, Any]) -> str | None:
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
) -> SamInvocation:
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
    return SamInvocation(function, event, response, seconds, report=report)
