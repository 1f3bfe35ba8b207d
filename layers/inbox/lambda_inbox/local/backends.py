"""The local services: DynamoDB Local (or moto), SQS on a moto server, Kafka on librdkafka's
mock cluster. Each is a context manager yielding its endpoint; all listen on loopback only.

DynamoDB Local is started by the repository's one launcher (devkit.dynamodb_local); when the jar
is missing it is fetched with scripts/fetch-dynamodb-local.sh first.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

JAVA_MISSING = (
    "Java is not on PATH: DynamoDB runs on moto instead of DynamoDB Local. moto ignores "
    "ClientRequestToken and loses writes under concurrent transactions; install Java 17+ "
    "for the real engine."
)


class BackendError(RuntimeError):
    """A local service could not be started."""


@dataclass(frozen=True)
class Endpoints:
    dynamodb: str
    sqs: str
    kafka_bootstrap: str
    dynamodb_backend: str


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """A threaded moto server on a free loopback port (SQS, and DynamoDB with `--backend moto`)."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    from .ports import free_port

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@contextlib.contextmanager
def dynamodb_local(repo_root: Path, say: Callable[[str], None]) -> Iterator[str]:
    """DynamoDB Local through the repository's launcher, fetched first when missing."""
    from devkit import dynamodb_local as module

    home = module.dynamodb_local_dir()
    fetch = repo_root / "scripts" / "fetch-dynamodb-local.sh"
    if not (home / "DynamoDBLocal.jar").is_file() and fetch.is_file():
        say(f"fetching DynamoDB Local into {home} ...")
        subprocess.run(["bash", str(fetch)], cwd=repo_root, check=False)
    try:
        with module.running_dynamodb_local() as endpoint:
            yield str(endpoint)
    except module.DynamoDBLocalError as error:
        raise BackendError(str(error)) from None


def java_available() -> bool:
    return shutil.which("java") is not None


@contextlib.contextmanager
def kafka_mock_cluster(brokers: int = 1) -> Iterator[str]:
    """librdkafka's mock cluster, owned by a producer kept alive while the block runs; yields
    the bootstrap servers."""
    try:
        import confluent_kafka
    except ImportError:
        raise BackendError("Kafka needs confluent-kafka: pip install confluent-kafka") from None
    owner = confluent_kafka.Producer({"test.mock.num.brokers": brokers})
    found = owner.list_topics(timeout=10).brokers
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in found.values())
    try:
        yield bootstrap
    finally:
        owner.flush(2)
        del owner


@contextlib.contextmanager
def local_services(
    repo_root: Path, *, backend: str, say: Callable[[str], None]
) -> Iterator[Endpoints]:
    """Every service of the local stack, stopped on exit. `backend`: dynamodb-local or moto
    (dynamodb-local falls back to moto with a warning when Java is missing)."""
    with contextlib.ExitStack() as stack:
        sqs = stack.enter_context(moto_server())
        if backend == "dynamodb-local" and not java_available():
            say(f"warning: {JAVA_MISSING}")
            backend = "moto"
        dynamodb = sqs if backend == "moto" else stack.enter_context(dynamodb_local(repo_root, say))
        kafka = stack.enter_context(kafka_mock_cluster())
        yield Endpoints(dynamodb=dynamodb, sqs=sqs, kafka_bootstrap=kafka, dynamodb_backend=backend)
