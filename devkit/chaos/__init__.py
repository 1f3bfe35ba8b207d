"""Chaos at scale: orders, payments and notifications under duplicates, crashes, conflicts and
throttling, with 8 concurrent consumers on one DynamoDB Local; effects checked from the tables.

    .venv/bin/python benchmarks/chaos.py [--deliveries 100000] [--seed N] [--consumers 8]

What runs (each "consumer" is a thread standing for one warm Lambda container that holds its own
copy of the three functions, `functions/*/app.py` loaded as the tests load them, each with its own
boto3 clients):

- order_events (SQS batches of 10), payment_events (MSK batches of 50 over 10 partitions) and
  customer_notifications (SQS batches of 10, leased mode, a webhook on 127.0.0.1) share one inbox
  table and one domain table on DynamoDB Local, as in the template; each has its own SQS
  dead-letter queue on a moto server.
- The stream: `--deliveries` deliveries, of which `--duplicates` (default 35%) repeat an event
  already in the stream, half with the same transport id (SQS messageId / Kafka partition and
  offset: the broker's at-least-once delivery) and half with a new one (a producer retry). A few
  events are logical duplicates (a new event_id for an order or payment already sent), a few are
  poison (invalid payloads; for notifications also a webhook that refuses with 422). Hot keys:
  most orders touch a handful of SKUs, most payments and notifications a handful of customers.
- Faults, drawn from seeded generators (one per consumer thread): a crash (an exception no code
  under test catches, as if the runtime died) just before and just after every committing call
  (`TransactWriteItems` before its HTTP send / after its response; the lease claim `PutItem`;
  the dead-letter `SendMessage`), the batch response lost after the handler returned (the whole
  batch comes back), throttling and transaction conflicts answered instead of DynamoDB by a
  `before-send` hook (`ThrottlingException` / `ProvisionedThroughputExceededException`, HTTP 400,
  which botocore retries; `TransactionConflict` cancellations: DynamoDB Local serialises
  concurrent transactions on an item rather than cancelling them, so real conflicts are rare
  here), transient webhook errors (503).
- Every delivery reported failed, or lost to a crash, is delivered again (same transport id,
  receive count + 1) after a short visibility delay, until nothing is pending, as the event
  source would.

- The outbox leg, once the stream has settled: the shipped orders' notification requests read
  from the domain table's stream on DynamoDB Local, relayed by `functions/outbox_relay` (crashing
  after some sends, so some are relayed twice), then consumed by the same containers
  (`relay.py`).
At the end everything is computed from the tables (and the DLQs and the webhook's log): lost
(a distinct event whose effect is missing), double-applied (an effect applied twice), poison
dead-lettered, requests and write units per message by workload. Exit status 1 when lost or
double-applied is not 0.

The seed fixes the workload and each thread's fault sequence; how the threads interleave (and so
which call meets which fault, and where real conflicts occur) is up to the machine.
"""

from .run import ChaosResult, main, run_chaos
from .verdict import scan
from .webhook import WebhookReceiver, running_webhook
from .workload import (
    CRASH_KINDS,
    NOTIFICATIONS,
    ORDERS,
    PAYMENTS,
    WORKLOADS,
    ChaosConfig,
    Crash,
    Delivery,
    kafka_record,
    sqs_record,
)

__all__ = [
    "CRASH_KINDS",
    "NOTIFICATIONS",
    "ORDERS",
    "PAYMENTS",
    "WORKLOADS",
    "ChaosConfig",
    "ChaosResult",
    "Crash",
    "Delivery",
    "WebhookReceiver",
    "kafka_record",
    "main",
    "run_chaos",
    "running_webhook",
    "scan",
    "sqs_record",
]
