"""The formats lambda-inbox reads and writes on the wire, declared for its tools (the command
line's replay and redrive, the local stack, the testing kit): what a dead letter carries, how
the outbox sends, how a source's event reads into messages, and the services' limits. A
handler needs none of it; `import lambda_inbox` never loads it."""

from lambda_inbox._dead_letter.batches import (
    SQS_BATCH_BYTES,
    SQS_BATCH_ENTRIES,
    send_sqs_batch,
    sqs_batches,
)
from lambda_inbox._dead_letter.envelope import send_message_request
from lambda_inbox._internal import (
    MAX_BATCH_ENTRIES,
    SQS_MAX_ATTRIBUTES,
    SQS_MAX_MESSAGE_BYTES,
)
from lambda_inbox._outbox.destinations import Destination, destination_of
from lambda_inbox._outbox.relay import sender_for
from lambda_inbox._outbox.sending import Sender, chunks
from lambda_inbox._sources.aggregation import aggregated_record_class
from lambda_inbox._sources.fields import KPL_MAGIC
from lambda_inbox._sources.identity import IDEMPOTENCY_KEY_ATTRIBUTE, MESSAGE_KEY_ATTRIBUTE
from lambda_inbox._sources.kafka import parse_kafka_event
from lambda_inbox._sources.kinesis import parse_kinesis_event
from lambda_inbox._sources.sqs import parse_sqs_event
from lambda_inbox._sources.streams import parse_dynamodb_stream_event, stream_document

__all__ = [
    "IDEMPOTENCY_KEY_ATTRIBUTE",
    "KPL_MAGIC",
    "MAX_BATCH_ENTRIES",
    "MESSAGE_KEY_ATTRIBUTE",
    "SQS_BATCH_BYTES",
    "SQS_BATCH_ENTRIES",
    "SQS_MAX_ATTRIBUTES",
    "SQS_MAX_MESSAGE_BYTES",
    "Destination",
    "Sender",
    "aggregated_record_class",
    "chunks",
    "destination_of",
    "parse_dynamodb_stream_event",
    "parse_kafka_event",
    "parse_kinesis_event",
    "parse_sqs_event",
    "send_message_request",
    "send_sqs_batch",
    "sender_for",
    "sqs_batches",
    "stream_document",
]
