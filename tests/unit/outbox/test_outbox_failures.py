"""Partial failures of the outbox relay, per destination kind, at the botocore boundary
(`Stubber`: each expected request is checked whole, each answer is the service's shape): a
refused entry fails exactly its stream record; transient refusals (throttling, a fault of the
service) are sent again, alone, within the deadline; nothing is dropped."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeDeserializer
from botocore.stub import Stubber

from lambda_inbox import OutboxMessage, OutboxRelay, RetryPolicy, UnitOfWork
from lambda_inbox._outbox.eventbridge import event_entry
from lambda_inbox._outbox.sending import chunks
from lambda_inbox._outbox.sns import sns_entry
from lambda_inbox_tools.testing import FakeLambdaContext

TOPIC = "arn:aws:sns:us-east-1:123456789012:shipments"
FIFO_TOPIC = "arn:aws:sns:us-east-1:123456789012:shipments.fifo"


def written(message_id: str, destination: str) -> tuple[dict[str, Any], OutboxMessage]:
    uow = UnitOfWork()
    uow.outbox("domain", destination=destination, body='{"n":1}', message_id=message_id)
    item: dict[str, Any] = uow.actions[0].request["Item"]
    plain = {k: TypeDeserializer().deserialize(v) for k, v in item.items()}
    message = OutboxMessage.from_item(plain)
    assert message is not None
    return item, message


def batch(destination: str, count: int) -> tuple[dict[str, Any], list[OutboxMessage]]:
    records, messages = [], []
    for n in range(1, count + 1):
        item, message = written(f"m-{n}", destination)
        change = {"SequenceNumber": str(n), "Keys": {}, "NewImage": item}
        records.append({"eventName": "INSERT", "dynamodb": change})
        messages.append(message)
    return {"Records": records}, messages


@pytest.fixture
def clients() -> Iterator[dict[str, Any]]:
    made = {
        name: boto3.client(
            name,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        for name in ("sqs", "sns", "events")
    }
    stubbers = {name: Stubber(client) for name, client in made.items()}
    for stubber in stubbers.values():
        stubber.activate()
    yield {**made, "stub": stubbers}
    for stubber in stubbers.values():
        stubber.deactivate()


def relay(clients: dict[str, Any], **options: Any) -> OutboxRelay:
    return OutboxRelay(
        destinations={"shipments": TOPIC, "fifo": FIFO_TOPIC, "orders": "orders"},
        sqs=clients["sqs"],
        sns=clients["sns"],
        events=clients["events"],
        **options,
    )


def publish(messages: list[tuple[str, OutboxMessage]], topic: str = TOPIC) -> dict[str, Any]:
    fifo = topic.endswith(".fifo")
    entries = [sns_entry(entry_id, message, fifo) for entry_id, message in messages]
    return {"TopicArn": topic, "PublishBatchRequestEntries": entries}


def emf(captured: str, kind: str) -> dict[str, Any]:
    for line in captured.splitlines():
        if line.startswith("{") and f'"destination_kind":"{kind}"' in line:
            document: dict[str, Any] = json.loads(line)
            return document
    raise AssertionError(f"no metrics for {kind}")


def test_failed_publish_entries_fail_exactly_their_records(
    clients: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    event, messages = batch("shipments", 3)
    stub = clients["stub"]["sns"]
    stub.add_response(
        "publish_batch",
        {
            "Successful": [{"Id": "0", "MessageId": "a"}],
            "Failed": [
                {"Id": "1", "Code": "InvalidParameter", "Message": "no", "SenderFault": True},
                {"Id": "2", "Code": "InternalError", "Message": "later", "SenderFault": False},
            ],
        },
        publish([(str(i), m) for i, m in enumerate(messages)]),
    )
    # Only the transient refusal goes again, under its own entry id.
    stub.add_response(
        "publish_batch",
        {"Successful": [{"Id": "2", "MessageId": "b"}], "Failed": []},
        publish([("2", messages[2])]),
    )

    response = relay(clients).handle(event, FakeLambdaContext())

    assert response == {"batchItemFailures": [{"itemIdentifier": "2"}]}
    stub.assert_no_pending_responses()
    metrics = emf(capsys.readouterr().out, "sns")
    assert (metrics["OutboxRelayed"], metrics["OutboxRelayFailures"]) == ([2.0], [1.0])
    assert metrics["OutboxRelayRetries"] == [1.0]


def test_failed_events_fail_exactly_their_records(clients: dict[str, Any]) -> None:
    event, messages = batch("orders", 4)
    stub = clients["stub"]["events"]
    stub.add_response(
        "put_events",
        {
            "FailedEntryCount": 2,
            "Entries": [
                {"EventId": "e-1"},
                {"ErrorCode": "ThrottlingException", "ErrorMessage": "slow down"},
                {"EventId": "e-3"},
                {"ErrorCode": "MalformedDetail", "ErrorMessage": "bad"},
            ],
        },
        {"Entries": [event_entry(m, "orders") for m in messages]},
    )
    stub.add_response(
        "put_events",
        {"FailedEntryCount": 0, "Entries": [{"EventId": "e-2"}]},
        {"Entries": [event_entry(messages[1], "orders")]},
    )

    response = relay(clients).handle(event, FakeLambdaContext())

    assert response == {"batchItemFailures": [{"itemIdentifier": "4"}]}
    stub.assert_no_pending_responses()


def test_an_answer_that_does_not_account_for_an_entry_sends_it_again(
    clients: dict[str, Any],
) -> None:
    event, messages = batch("orders", 2)
    stub = clients["stub"]["events"]
    stub.add_response(
        "put_events",
        {"FailedEntryCount": 0, "Entries": [{"EventId": "e-1"}]},
        {"Entries": [event_entry(m, "orders") for m in messages]},
    )
    stub.add_response(
        "put_events",
        {"FailedEntryCount": 0, "Entries": [{"EventId": "e-2"}]},
        {"Entries": [event_entry(messages[1], "orders")]},
    )

    assert relay(clients).handle(event, FakeLambdaContext()) == {"batchItemFailures": []}
    stub.assert_no_pending_responses()


def test_a_throttled_call_is_sent_again_after_a_backoff(clients: dict[str, Any]) -> None:
    event, messages = batch("fifo", 2)
    stub = clients["stub"]["sns"]
    expected = publish([(str(i), m) for i, m in enumerate(messages)], FIFO_TOPIC)
    stub.add_client_error("publish_batch", "Throttling", "Rate exceeded", 400, expected)
    stub.add_response(
        "publish_batch",
        {"Successful": [{"Id": "0", "MessageId": "a"}, {"Id": "1", "MessageId": "b"}]},
        expected,
    )

    assert relay(clients).handle(event, FakeLambdaContext()) == {"batchItemFailures": []}
    stub.assert_no_pending_responses()


def test_a_call_refused_for_good_fails_its_records_at_once(clients: dict[str, Any]) -> None:
    event, messages = batch("shipments", 2)
    stub = clients["stub"]["sns"]
    stub.add_client_error(
        "publish_batch",
        "AuthorizationError",
        "not allowed",
        403,
        publish([(str(i), m) for i, m in enumerate(messages)]),
    )

    response = relay(clients).handle(event, FakeLambdaContext())

    assert response == {"batchItemFailures": [{"itemIdentifier": "1"}, {"itemIdentifier": "2"}]}
    stub.assert_no_pending_responses()


def test_throttling_backs_off_only_as_long_as_attempts_allow(clients: dict[str, Any]) -> None:
    event, _ = batch("orders", 2)
    stub = clients["stub"]["events"]
    throttled = {
        "FailedEntryCount": 2,
        "Entries": [{"ErrorCode": "ThrottlingException", "ErrorMessage": "slow"}] * 2,
    }
    for _ in range(3):
        stub.add_response("put_events", throttled)

    response = relay(clients, retry=RetryPolicy(max_attempts=3)).handle(event, FakeLambdaContext())

    assert response == {"batchItemFailures": [{"itemIdentifier": "1"}, {"itemIdentifier": "2"}]}
    stub.assert_no_pending_responses()


def test_throttling_backs_off_only_as_long_as_the_deadline_allows(
    clients: dict[str, Any],
) -> None:
    event, _ = batch("orders", 2)
    stub = clients["stub"]["events"]
    throttled = {
        "FailedEntryCount": 2,
        "Entries": [{"ErrorCode": "ThrottlingException", "ErrorMessage": "slow"}] * 2,
    }
    for _ in range(200):
        stub.add_response("put_events", throttled)
    policy = RetryPolicy(max_attempts=200, base_delay=0.05, max_delay=0.1)
    calls: list[int] = []
    clients["events"].meta.events.register(
        "before-parameter-build.events.PutEvents", lambda **_: calls.append(1)
    )
    started = time.monotonic()

    # 1 s of Lambda time, 0.2 s of it kept back: at most 0.8 s of attempts and backoffs.
    response = relay(clients, retry=policy).handle(event, FakeLambdaContext(remaining_millis=1000))

    assert time.monotonic() - started < 3.0  # the deadline, not the 200 attempts, ended it
    assert response == {"batchItemFailures": [{"itemIdentifier": "1"}, {"itemIdentifier": "2"}]}
    assert 1 < len(calls) < 200  # attempts were made, and the deadline cut them off


def fifo_batch(groups: list[str]) -> tuple[dict[str, Any], list[OutboxMessage]]:
    records, messages = [], []
    for n, group in enumerate(groups, start=1):
        uow = UnitOfWork()
        uow.outbox(
            "domain", destination="fifo", body='{"n":1}', message_id=f"m-{n}", group_id=group
        )
        item = uow.actions[0].request["Item"]
        change = {"SequenceNumber": str(n), "Keys": {}, "NewImage": item}
        records.append({"eventName": "INSERT", "dynamodb": change})
        message = OutboxMessage.from_item(
            {k: TypeDeserializer().deserialize(v) for k, v in item.items()}
        )
        assert message is not None
        messages.append(message)
    return {"Records": records}, messages


def test_a_fifo_groups_later_messages_wait_for_its_failed_one(clients: dict[str, Any]) -> None:
    """m-1 (group g1) is refused: m-3 (g1, later) is not published before it, so the stream's
    retry sends both again in order; m-2 (g2) is published."""
    event, messages = fifo_batch(["g1", "g2", "g1"])
    stub = clients["stub"]["sns"]
    stub.add_response(
        "publish_batch",
        {
            "Successful": [{"Id": "1", "MessageId": "b"}],
            "Failed": [{"Id": "0", "Code": "KMSDisabled", "Message": "no", "SenderFault": True}],
        },
        publish([("0", messages[0]), ("1", messages[1])], FIFO_TOPIC),
    )

    response = relay(clients).handle(event, FakeLambdaContext())

    assert response == {"batchItemFailures": [{"itemIdentifier": "1"}, {"itemIdentifier": "3"}]}
    stub.assert_no_pending_responses()  # m-3 never published


def test_a_fifo_batch_holds_one_message_per_group(clients: dict[str, Any]) -> None:
    """A refused message retried in the same call as a later one of its group would arrive
    after it: a group is never twice in one call."""
    event, messages = fifo_batch(["g1", "g1", "g2"])
    stub = clients["stub"]["sns"]
    stub.add_response(
        "publish_batch",
        {"Successful": [{"Id": "0", "MessageId": "a"}]},
        publish([("0", messages[0])], FIFO_TOPIC),
    )
    stub.add_response(
        "publish_batch",
        {"Successful": [{"Id": "0", "MessageId": "b"}, {"Id": "1", "MessageId": "c"}]},
        publish([("0", messages[1]), ("1", messages[2])], FIFO_TOPIC),
    )

    assert relay(clients).handle(event, FakeLambdaContext()) == {"batchItemFailures": []}
    stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("sizes", "batches"),
    [
        ([1] * 23, [10, 10, 3]),
        ([60, 60, 60, 10], [1, 1, 2]),  # 100 bytes a call: 60 + 60 would not fit
        ([150, 1, 1], [1, 2]),  # larger than a call on its own: alone, for the sender to refuse
        ([], []),
    ],
)
def test_chunks_keep_to_the_entries_and_bytes_of_a_call(
    sizes: list[int], batches: list[int]
) -> None:
    cut = list(chunks(sizes, lambda size: size, 10, 100))
    assert [len(batch) for batch in cut] == batches
    assert [size for batch in cut for size in batch] == sizes  # in order, nothing dropped
