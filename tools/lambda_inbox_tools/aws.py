"""AWS access for the command line: clients, queue names, and errors an operator can act on.

Every problem becomes a `CliError` whose message names the problem and the fix. `UsageProblem`
(exit 2) is for what the operator has to change in the command (a table or queue that does not
exist, no region, no credentials); `Failure` (exit 1) is for what went wrong while doing the work.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

_MISSING_QUEUE_CODES = frozenset(
    {"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "NonExistentQueue"}
)


class CliError(Exception):
    """A problem reported to the operator as one message; `exit_code` is the process status."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageProblem(CliError):
    """The command cannot run as given (exit 2)."""

    exit_code = EXIT_USAGE


class Failure(CliError):
    """The command ran and failed (exit 1)."""

    exit_code = EXIT_FAILED


def resolved_region(option: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The region the AWS CLI and the SDKs would use: `--region`, then `AWS_REGION`, then
    `AWS_DEFAULT_REGION`; None leaves it to the profile (boto3 itself reads only the last two)."""
    env = os.environ if environ is None else environ
    for value in (option, env.get("AWS_REGION"), env.get("AWS_DEFAULT_REGION")):
        if value and value.strip():
            return value.strip()
    return None


@dataclass
class Aws:
    """Clients built from the common options (`--endpoint-url`, `--region`) or boto3's settings.

    Without `--endpoint-url`, boto3's own settings apply, including the per-service variables
    `AWS_ENDPOINT_URL_DYNAMODB` and `AWS_ENDPOINT_URL_SQS` (a local stack whose DynamoDB and SQS
    listen on different ports).
    """

    endpoint_url: str | None = None
    region: str | None = None
    _clients: dict[tuple[str, int], Any] = field(default_factory=dict)

    def _client(self, service: str, attempts: int) -> Any:
        key = (service, attempts)
        if key not in self._clients:
            import boto3

            config = Config(
                connect_timeout=5,
                read_timeout=40,  # above SQS's longest receive wait (20 s)
                retries={"total_max_attempts": attempts, "mode": "standard"},
            )
            try:
                self._clients[key] = boto3.session.Session().client(
                    service,  # type: ignore[call-overload]
                    endpoint_url=self.endpoint_url,
                    region_name=resolved_region(self.region),
                    config=config,
                )
            except NoRegionError as error:
                raise UsageProblem(
                    "no AWS region: pass --region or set AWS_REGION (or a profile's region)"
                ) from error
            except ValueError as error:  # a malformed --endpoint-url
                raise UsageProblem(
                    f"invalid --endpoint-url {self.endpoint_url!r}: {error}"
                ) from error
        return self._clients[key]

    def dynamodb(self) -> DynamoDBClient:
        client: DynamoDBClient = self._client("dynamodb", 5)
        return client

    def sqs(self, *, attempts: int = 5) -> SQSClient:
        """An SQS client; `attempts=1` for a call whose failure is an answer (feature probes)."""
        client: SQSClient = self._client("sqs", attempts)
        return client

    def kinesis(self) -> Any:
        """A Kinesis client; its endpoint is `--endpoint-url`, else boto3's
        `AWS_ENDPOINT_URL_KINESIS` (a local stack's moto server)."""
        return self._client("kinesis", 5)

    def sns(self) -> Any:
        """An SNS client (`send --sns-topic`; replay to a topic); its endpoint is `--endpoint-url`,
        else boto3's `AWS_ENDPOINT_URL_SNS` (a local stack's moto server)."""
        return self._client("sns", 5)

    def events(self) -> Any:
        """An EventBridge client (`send --event-bus`; replay to a bus); its endpoint is
        `--endpoint-url`, else boto3's `AWS_ENDPOINT_URL_EVENTBRIDGE`."""
        return self._client("events", 5)

    def s3(self) -> Any:
        """An S3 client (replay reads an S3 on-failure destination)."""
        return self._client("s3", 5)

    def streams(self) -> Any:
        """A DynamoDB Streams client (replay reads a stream again); its endpoint is
        `--endpoint-url`, else boto3's `AWS_ENDPOINT_URL_DYNAMODB_STREAMS`."""
        return self._client("dynamodbstreams", 5)

    def where(self, service: str | None = None) -> str:
        """Where requests (of `service`, else of any client made) go, for messages."""
        for (name, _), client in self._clients.items():
            if service is None or name == service:
                return f"{client.meta.endpoint_url} ({client.meta.region_name})"
        return self.endpoint_url or self.region or "the default endpoint"


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def error_message(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Message", "")) or str(error)


@contextlib.contextmanager
def translated(aws: Aws, *, table: str | None = None) -> Iterator[None]:
    """Turn botocore errors raised in the block into `CliError`s that say what to do."""
    try:
        yield
    except CliError:
        raise
    except ClientError as error:
        code = error_code(error)
        operation = error.operation_name
        if code == "ResourceNotFoundException" and table is not None:
            raise UsageProblem(
                f"no table {table!r} at {aws.where('dynamodb')}: check --table (or INBOX_TABLE), "
                "--region and --endpoint-url"
            ) from error
        if code in _MISSING_QUEUE_CODES:
            raise UsageProblem(
                f"a queue does not exist at {aws.where('sqs')}: check the queue names, --region and "
                "--endpoint-url"
            ) from error
        if code in ("AccessDenied", "AccessDeniedException", "UnrecognizedClientException"):
            raise Failure(
                f"{operation} was denied ({code}): {error_message(error)}; check the credentials "
                "and the role's permissions"
            ) from error
        raise Failure(f"{operation} failed ({code}): {error_message(error)}") from error
    except (NoCredentialsError, PartialCredentialsError) as error:
        raise UsageProblem(
            "no AWS credentials: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
        ) from error
    except NoRegionError as error:
        raise UsageProblem(
            "no AWS region: pass --region or set AWS_REGION (or a profile's region)"
        ) from error
    except EndpointConnectionError as error:
        raise Failure(
            f"cannot reach {error.kwargs.get('endpoint_url', aws.where())}: is the endpoint "
            "up? (--endpoint-url, --region)"
        ) from error
    except BotoCoreError as error:
        raise Failure(f"AWS request failed: {error}") from error


@dataclass(frozen=True)
class Queue:
    """An SQS queue named on the command line, resolved to its URL."""

    given: str
    url: str

    @property
    def name(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def fifo(self) -> bool:
        return self.name.endswith(".fifo")


def resolve_queue(sqs: SQSClient, given: str, *, option: str, where: str) -> Queue:
    """A queue URL, queue name or queue ARN, checked to exist (`UsageProblem` if it does not)."""
    text = given.strip()
    if not text:
        raise UsageProblem(f"{option}: empty queue; pass a queue URL or name")
    try:
        if urlparse(text).scheme in ("http", "https"):
            sqs.get_queue_attributes(QueueUrl=text, AttributeNames=["QueueArn"])
            return Queue(given, text)
        if text.startswith("arn:"):
            parts = text.split(":")
            if len(parts) != 6 or parts[2] != "sqs":
                raise UsageProblem(f"{option}: {given!r} is not an SQS queue ARN")
            url = sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])
            return Queue(given, url["QueueUrl"])
        return Queue(given, sqs.get_queue_url(QueueName=text)["QueueUrl"])
    except ClientError as error:
        if error_code(error) in _MISSING_QUEUE_CODES:
            raise UsageProblem(
                f"{option}: no queue {given!r} at {where}: pass an existing queue's URL or name "
                "(and --region / --endpoint-url where it lives)"
            ) from error
        raise


def queue_arn(sqs: SQSClient, queue: Queue) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=["QueueArn"])
    return attributes["Attributes"]["QueueArn"]


def queue_depth(sqs: SQSClient, queue: Queue) -> dict[str, int]:
    """Approximate message counts: `visible`, `in_flight` (received, not deleted), `delayed`."""
    names: dict[QueueAttributeNameType, str] = {
        "ApproximateNumberOfMessages": "visible",
        "ApproximateNumberOfMessagesNotVisible": "in_flight",
        "ApproximateNumberOfMessagesDelayed": "delayed",
    }
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue.url,
        AttributeNames=list(names),
    )["Attributes"]
    return {label: int(attributes.get(name, "0")) for name, label in names.items()}
