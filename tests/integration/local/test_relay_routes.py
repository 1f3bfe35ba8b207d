"""`lambda-inbox local` relays to a template's topic and bus: an outbox relay function whose
destinations are the template's SNS topic (by its ARN) and EventBridge bus (by its name)
publishes the outbox items of a table's stream; the topic's subscription (raw delivery off) and
the bus's rule deliver to queues; the consumers behind them, with `envelope="sns"` and
`envelope="eventbridge"` and no key configured, commit each item once, though the relay died
after publishing its first batch and the stream mapping sent that batch again (the template and
its functions: relay_app/). DynamoDB Local holds the tables, the moto server the rest."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lambda_inbox import UnitOfWork
from lambda_inbox_tools.local.stack import LocalStack, running_stack
from lambda_inbox_tools.services.items import scan_plain
from lambda_inbox_tools.services.queues import MOTO_SENDER_ID

pytestmark = pytest.mark.integration

TEMPLATE = Path(__file__).resolve().parent / "relay_app" / "template.yaml"
NOTICES = 6


def write_outbox_items(stack: LocalStack) -> set[str]:
    """The outbox items a producer commits: half to the topic, half to the bus."""
    table = stack.stack.table("OutboxTable").name
    uow = UnitOfWork()
    for n in range(NOTICES):
        kind = "topic" if n % 2 == 0 else "bus"
        uow.outbox(table, destination=kind, body={"notice_id": f"n-{n}"}, message_id=f"m-{n}")
    stack.dynamodb.transact_write_items(
        TransactItems=[{"Put": action.request} for action in uow.actions]
    )
    return {f"{'topic' if n % 2 == 0 else 'bus'}#n-{n}" for n in range(NOTICES)}


def wait_for(
    condition: Callable[[], bool], what: Callable[[], object], seconds: float = 45
) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out: {what()}"
        time.sleep(0.2)


def test_the_relay_publishes_to_the_templates_topic_and_bus_and_each_notice_applies_once(
    dynamodb_local_endpoint: str, moto_server_endpoint: str
) -> None:
    with running_stack(
        TEMPLATE,
        dynamodb_endpoint=dynamodb_local_endpoint,
        sqs_endpoint=moto_server_endpoint,
        stack_name=f"relay-{time.monotonic_ns() % 10**8}",
        say=lambda _: None,
    ) as local:
        assert local.skipped == []
        local.start()
        expected = write_outbox_items(local)
        notices_table = local.stack.table("NoticesTable").name
        inbox_table = local.stack.table("InboxTable").name

        def applied() -> dict[str, int]:
            return {i["pk"]: int(i["times"]) for i in scan_plain(local.dynamodb, notices_table)}

        def inbox_keys() -> set[str]:
            return {i["pk"] for i in scan_plain(local.dynamodb, inbox_table)}

        # Each outbox message id in the name space of the SQS sender: SNS's or EventBridge's
        # deliveries, on moto its one SenderId.
        wanted_keys = {
            f"{'topic' if n % 2 == 0 else 'bus'}-notices#{MOTO_SENDER_ID}/m-{n}"
            for n in range(NOTICES)
        }
        (relay,) = local.stream_pollers
        # Both copies of each message are handled once the relay's retry succeeded and the
        # queues are drained.
        wait_for(
            lambda: applied() == dict.fromkeys(expected, 1) and inbox_keys() == wanted_keys,
            lambda: (applied(), inbox_keys(), relay.stats),
        )
        wait_for(lambda: local.pending() == 0, local.pending, 10)
        local.stop()
        errors = [e for runner in local.runners() for e in runner.stats.errors]
        stats = relay.stats
        delivered = sum(poller.stats.records for poller in local.sqs_pollers)
        final = applied()
    assert stats.failed_invocations == 1  # the relay died once, after publishing
    assert stats.given_up_batches == 0
    assert final == dict.fromkeys(expected, 1)
    # The dead invocation's messages were published again: the consumers saw copies.
    assert NOTICES < delivered <= 2 * NOTICES
    assert [e for e in errors if "dies after publishing" not in str(e)] == []
