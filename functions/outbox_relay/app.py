"""outbox-relay: send the outbox items order_events commits (`OUTBOX#...` items of DomainTable,
from its stream) to their queues, at least once; customer_notifications' inbox makes each one
effectively once, keyed on the event id fixed when the item was written.

Destinations are names in the items (`notifications`), mapped here to queue URLs, so the
consumers that write outbox items need no queue in their environment.
"""

import os

from lambda_inbox import OutboxRelay

relay = OutboxRelay(destinations={"notifications": os.environ["NOTIFICATION_QUEUE_URL"]})


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return relay.handle(event, context)
