"""outbox-relay: send the outbox items order_events commits (`OUTBOX#...` items of DomainTable,
from its stream) on to customer-notifications, at least once; its inbox makes each one
effectively once, keyed on the event id fixed when the item was written.

Destinations are names in the items (`notifications`), mapped here, so the consumers that write
outbox items need no queue or topic in their environment. With `NOTIFICATION_TOPIC_ARN` set
(template.yaml sets it) the notifications are published to that SNS topic, whose subscription
(raw message delivery) puts each one in NotificationQueue as it was written; without it they
are sent to `NOTIFICATION_QUEUE_URL` directly.
"""

import os

import boto3

from lambda_inbox import OutboxRelay

TOPIC_ARN = os.environ.get("NOTIFICATION_TOPIC_ARN", "")
#: The topic's client, a module global so that a harness can watch its calls.
sns = boto3.client("sns") if TOPIC_ARN else None
relay = OutboxRelay(
    destinations={"notifications": TOPIC_ARN or os.environ["NOTIFICATION_QUEUE_URL"]}, sns=sns
)


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return relay.handle(event, context)
