"""The Docker engine, the local Lambda image and the containers SAM CLI leaves behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from devkit.paths import REPO_ROOT

from .processes import Processes, run, say, wait_until
from .services import Services
from .settings import IMAGE_LABEL, SERVICE_TIMEOUT, SamLocalError


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
