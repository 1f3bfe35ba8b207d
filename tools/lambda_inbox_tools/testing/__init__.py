"""lambda-inbox's testing kit: prove a consumer effectively-once in its own tests.

Install with `pip install "lambda-inbox[testing]"`; pytest then loads the kit's fixtures
(`lambda_inbox_tools.pytest_plugin`: DynamoDB Local, a moto server, `local_app`,
`lambda_context`). What it offers, by module:

- `app`: a SAM template's tables and queues on local endpoints, its functions loaded in-process
  (`running_local_app`, `LocalApp`, `LocalFunction`; the pytest fixture `local_app`);
- `events`: SQS and Kafka records and events as the event sources deliver them, a message
  delivered again (`delivered_again`); `stream_events`: the same for Kinesis Data Streams and
  DynamoDB Streams; `values`: Kafka values in Avro and Protobuf, with or without the Confluent
  prefix (extra `kafka-codecs`); `producers`: SNS notifications, EventBridge events and S3
  notifications as SQS bodies;
- `delivery`: a handler's answer read as Lambda reads it (AWS's one rule,
  `lambda_inbox_tools.batch_responses`): the records that failed, the event delivered after it
  (`event_after`), redelivery until acknowledged; concurrent invocations;
- `crashes`: the runtime dying just before or after a DynamoDB write, a write failing after
  the SDK's retries, DynamoDB's own failures of a write (`check.dynamodb.answers`: cancelled
  transactions with their reasons, transaction conflicts, unprocessed batch items), and a
  write's answer lost (the SDK sends it again); `faults`: throttling, cancelled transactions,
  lost answers, stale reads, slow sends;
- `effectively_once`: `check_effectively_once`, which plays the event source against a handler
  (`check`: duplicates, redeliveries, messages under a new id, SNS's redelivery of a
  notification, rewinds, AWS's order and none across groups, the function's own event source
  mapping settings, overlapping invocations, stale reads, late redeliveries on its clock,
  `CheckClock`) with faults at every write position, and checks the effects happened once per
  message key (`NotEffectivelyOnce` carries the `Report`);
- `limits`: what SQS and DynamoDB refuse and moto accepts, as client hooks;
- `context`: a Lambda context.

Documented in docs/testing.md.
"""

from .app import LocalApp, LocalFunction, running_local_app
from .check.clock import CheckClock
from .context import FakeLambdaContext
from .crashes import CrashSwitch, InjectedCrash
from .delivery import (
    deliver_until_acknowledged,
    event_after,
    failed_ids,
    failed_offsets,
    failed_sequence_numbers,
    run_concurrently,
)
from .effectively_once import NotEffectivelyOnce, Report, check_effectively_once
from .events import (
    delivered_again,
    kafka_event,
    kafka_record,
    payload,
    record_id,
    sqs_event,
    sqs_record,
)
from .producers import eventbridge_event, s3_notification, s3_test_event, sns_notification
from .stream_events import (
    aggregated_kinesis_record,
    dynamodb_stream_event,
    dynamodb_stream_record,
    kinesis_event,
    kinesis_record,
)
from .values import avro_value, json_value, protobuf_value

__all__ = [
    "CheckClock",
    "CrashSwitch",
    "FakeLambdaContext",
    "InjectedCrash",
    "LocalApp",
    "LocalFunction",
    "NotEffectivelyOnce",
    "Report",
    "aggregated_kinesis_record",
    "avro_value",
    "check_effectively_once",
    "deliver_until_acknowledged",
    "delivered_again",
    "dynamodb_stream_event",
    "dynamodb_stream_record",
    "event_after",
    "eventbridge_event",
    "failed_ids",
    "failed_offsets",
    "failed_sequence_numbers",
    "json_value",
    "kafka_event",
    "kafka_record",
    "kinesis_event",
    "kinesis_record",
    "payload",
    "protobuf_value",
    "record_id",
    "run_concurrently",
    "running_local_app",
    "s3_notification",
    "s3_test_event",
    "sns_notification",
    "sqs_event",
    "sqs_record",
]
