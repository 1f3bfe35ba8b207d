"""Read a range of offsets of one partition again, from MSK or any Kafka cluster.

`--auth msk-iam` signs in with MSK's IAM authentication (SASL/OAUTHBEARER over TLS), its token
made by AWS's signer library (`aws-msk-iam-sasl-signer-python`) from boto3's credentials; `none`
is a plaintext cluster (a local one). Records come back in the shape Lambda's Kafka event gives
them (base64 key and value, headers as byte lists), so the library's own Kafka adapter reads
them as it reads an event.

librdkafka's own log lines go to a silent logger: a cluster that cannot be reached is one
`ClusterError` after `CHECK_SECONDS`, not a screen of reconnection attempts.
"""

from __future__ import annotations

import base64
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

Auth = Literal["none", "msk-iam"]
#: How long one read waits for records that do not come (the range is beyond the partition's end).
READ_TIMEOUT_SECONDS = 10.0
#: How long the first contact with a cluster may take before it counts as unreachable.
CHECK_SECONDS = 5.0

_SILENT = logging.getLogger("lambda_inbox_tools.replay.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


class ClusterError(RuntimeError):
    """The cluster could not be read (unreachable, refused, no such topic or partition)."""


@dataclass
class RangeRead:
    """What a read found: the records, and the offsets it could not find (deleted by retention
    or compaction, or beyond the partition's end)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)


def client_config(bootstrap: str, auth: Auth, region: str | None) -> dict[str, Any]:
    """confluent-kafka's settings for a consumer that reads and never commits."""
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": f"lambda-inbox-kafka-replay-{uuid.uuid4().hex[:12]}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "allow.auto.create.topics": False,
        "socket.connection.setup.timeout.ms": int(CHECK_SECONDS * 1000),
        "logger": _SILENT,
    }
    if auth == "msk-iam":
        if not region:
            raise ClusterError("--auth msk-iam needs a region (--region or AWS_REGION)")
        config.update(
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "OAUTHBEARER",
                "oauth_cb": msk_iam_token(region),
            }
        )
    return config


def msk_iam_token(region: str) -> Any:
    """The OAUTHBEARER callback: an MSK IAM token and its expiry (seconds) from AWS's signer."""
    try:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider  # type: ignore[import-untyped]
    except ImportError:
        raise ClusterError(
            "--auth msk-iam needs aws-msk-iam-sasl-signer-python: "
            "pip install 'lambda-inbox[kafka-replay]'"
        ) from None

    def token(_config: object) -> tuple[str, float]:
        value, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
        return value, expiry_ms / 1000

    return token


class ClusterReader:
    """One consumer per cluster for the whole replay; each `read` assigns a partition at an
    offset. `check()` reaches the cluster once (and learns its topics) or raises."""

    def __init__(self, bootstrap: str, *, auth: Auth = "none", region: str | None = None) -> None:
        try:
            from confluent_kafka import Consumer
        except ImportError:
            raise ClusterError(
                "reading the cluster needs confluent-kafka: pip install 'lambda-inbox[kafka-replay]'"
            ) from None
        self.bootstrap = bootstrap
        self._consumer = Consumer(client_config(bootstrap, auth, region))
        self._partitions: dict[str, int] | None = None

    def check(self, timeout: float | None = None) -> dict[str, int]:
        """The cluster's topics and their partition counts; `ClusterError` when it cannot be
        reached within `timeout` seconds (`CHECK_SECONDS`)."""
        timeout = CHECK_SECONDS if timeout is None else timeout
        if self._partitions is None:
            from confluent_kafka import KafkaException

            try:
                metadata = self._consumer.list_topics(timeout=timeout)
            except KafkaException as error:
                reason = error.args[0].str() if error.args else str(error)
                raise ClusterError(
                    f"cannot reach the Kafka cluster at {self.bootstrap} within {timeout:g} s "
                    f"({reason})"
                ) from None
            self._partitions = {
                name: len(topic.partitions)
                for name, topic in metadata.topics.items()
                if topic.error is None
            }
        return self._partitions

    def read(
        self,
        topic: str,
        partition: int,
        first: int,
        last: int,
        *,
        timeout: float = READ_TIMEOUT_SECONDS,
    ) -> RangeRead:
        from confluent_kafka import KafkaException, TopicPartition

        partitions = self.check()
        if topic not in partitions:
            raise ClusterError(f"no topic {topic!r} on the cluster at {self.bootstrap}")
        if not 0 <= partition < partitions[topic]:
            raise ClusterError(
                f"topic {topic!r} has {partitions[topic]} partitions: no partition {partition}"
            )
        found = RangeRead()
        try:
            low, high = self._consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout
            )
        except KafkaException as error:
            raise ClusterError(f"{topic}-{partition}: {error}") from None
        start, end = max(first, low), min(last, high - 1)
        found.missing = [o for o in range(first, last + 1) if o < start or o > end]
        if start > end:
            return found
        self._consumer.assign([TopicPartition(topic, partition, start)])
        seen: set[int] = set()
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and (not seen or max(seen) < end):
                message = self._consumer.poll(min(1.0, max(0.0, deadline - time.monotonic())))
                if message is None:
                    continue
                if message.error():
                    raise ClusterError(f"{topic}-{partition}: {message.error()}")
                offset = message.offset()
                if offset is None or offset > end:
                    break
                seen.add(offset)
                found.records.append(lambda_record(message))
        finally:
            self._consumer.unassign()
        # Offsets inside the range that never came: compacted away, or transaction markers.
        found.missing += [o for o in range(start, end + 1) if o not in seen]
        found.missing.sort()
        return found

    def close(self) -> None:
        self._consumer.close()


def lambda_record(message: Any) -> dict[str, Any]:
    """A consumed message in the shape of a record of Lambda's Kafka event."""
    kind, stamp = message.timestamp()
    record: dict[str, Any] = {
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "timestamp": stamp,
        "timestampType": "LOG_APPEND_TIME" if kind == 2 else "CREATE_TIME",
        "headers": [{name: list(value or b"")} for name, value in message.headers() or []],
    }
    if message.value() is not None:
        record["value"] = base64.b64encode(message.value()).decode("ascii")
    if message.key() is not None:
        record["key"] = base64.b64encode(message.key()).decode("ascii")
    return record
