"""`lambda-inbox kafka-replay`: what a Kafka event source gave up on, read again and republished
to a queue that feeds the same consumer. No Typer or Rich here (the command line is in
`cli.kafka_replay_command`); confluent-kafka loads only when a batch needs the cluster."""

from .cluster import Auth, ClusterError, ClusterReader
from .failures import FailedBatch, NotAFailureRecord, failed_batches
from .replay import REPLAY_CODE, KafkaReplay, ReplayReport

__all__ = [
    "REPLAY_CODE",
    "Auth",
    "ClusterError",
    "ClusterReader",
    "FailedBatch",
    "KafkaReplay",
    "NotAFailureRecord",
    "ReplayReport",
    "failed_batches",
]
