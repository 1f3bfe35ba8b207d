"""An outbox relay to the template's topic and bus, and one consumer behind each.

The relay maps `topic` to the topic's ARN and `bus` to the bus's name. Its first invocation
dies after publishing, before answering (a crash the stream mapping retries): every message of
that batch is published twice. The consumers, with no key configured, read the topic's
notifications with `envelope="sns"` and the bus's events with `envelope="eventbridge"` and key
each on its outbox message id, so each notice is applied once."""

import os
from typing import Any

from lambda_inbox import InboxConsumer, OutboxRelay, UnitOfWork

NOTICES_TABLE = os.environ["NOTICES_TABLE"]
relay = OutboxRelay(
    destinations={"topic": os.environ["NOTICES_TOPIC_ARN"], "bus": os.environ["NOTICES_BUS"]}
)
invocations: list[int] = []


def relay_handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    response = relay.handle(event, context)
    invocations.append(len(event["Records"]))
    if len(invocations) == 1:
        raise RuntimeError("the relay dies after publishing, before answering")
    return response


def _apply(kind: str) -> Any:
    def notice(body: dict[str, Any], uow: UnitOfWork) -> None:
        uow.update(
            NOTICES_TABLE,
            {"pk": f"{kind}#{body['notice_id']}"},
            "ADD times :one",
            values={":one": 1},
        )

    return notice


topic_consumer = InboxConsumer("topic-notices", model=dict, decide=_apply("topic"), envelope="sns")
bus_consumer = InboxConsumer(
    "bus-notices", model=dict, decide=_apply("bus"), envelope="eventbridge"
)


def topic_handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    return topic_consumer.handle(event, context)


def bus_handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    return bus_consumer.handle(event, context)
