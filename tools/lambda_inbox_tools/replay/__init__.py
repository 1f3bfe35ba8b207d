"""`lambda-inbox replay`: what an event source mapping gave up on, read again from its
on-failure record and republished to a queue that feeds the same consumer. Kafka batches (MSK
or self-managed: records kept by an S3 destination, else read from the cluster), Kinesis
batches (read again from the stream) and DynamoDB stream batches (their outbox items, or their
records). No Typer or Rich here (the command line is `cli.replay_command`); confluent-kafka
loads only when a batch needs a cluster."""

from .cluster import Auth, ClusterError, ClusterReader
from .failures import (
    FailureRecord,
    KafkaBatch,
    KinesisBatch,
    NotAFailureRecord,
    StreamBatch,
    failure_record,
)
from .kinesis import KinesisReader
from .report import Kept, ReplayReport
from .run import KINESIS_REPLAY_CODE, REPLAY_CODE, STREAM_REPLAY_CODE, Clusters, Replay
from .streams import StreamReader

__all__ = [
    "KINESIS_REPLAY_CODE",
    "REPLAY_CODE",
    "STREAM_REPLAY_CODE",
    "Auth",
    "ClusterError",
    "ClusterReader",
    "Clusters",
    "FailureRecord",
    "KafkaBatch",
    "Kept",
    "KinesisBatch",
    "KinesisReader",
    "NotAFailureRecord",
    "Replay",
    "ReplayReport",
    "StreamBatch",
    "StreamReader",
    "failure_record",
]
