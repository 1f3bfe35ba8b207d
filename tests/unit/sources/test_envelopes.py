"""What producers put in a queue (lambda_inbox._sources.envelopes): SNS notifications, EventBridge
events and S3 event notifications read as what they are, pinned to AWS's samples both ways, each
refusal proved by the body that must cause it (moto for the consumers)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.aws_documents import aws_document, shape_problems
from devkit.paths import REPO_ROOT
from lambda_inbox import (
    ConfigurationError,
    KeyStrategy,
    MessageResult,
    Outcome,
    PoisonMessage,
    UnitOfWork,
    current_envelope,
)
from lambda_inbox._sources.identity import fallback_key
from lambda_inbox._sources.sqs import parse_sqs_event, sqs_response
from lambda_inbox_tools.testing import delivered_again, sqs_event, sqs_record
from lambda_inbox_tools.testing.events import SENDER_ID
from lambda_inbox_tools.testing.producers import (
    eventbridge_event,
    s3_notification,
    s3_test_event,
    sns_notification,
)


def _body(name: str) -> str:
    return json.dumps(aws_document(name))


# ---- AWS's samples, both ways -------------------------------------------------------------


def test_the_sns_sample_is_read_under_its_message_id_with_its_fields() -> None:
    (message,) = parse_sqs_event(
        sqs_event(sqs_record(_body("sns-notification-in-sqs.json"))), envelope="sns"
    )
    assert message.delivery_id == "63a3f6b6-d533-4a47-aef9-fcf5cf758c76"
    assert message.envelope.fields["TopicArn"] == "arn:aws:sns:us-west-2:123456789012:MyTopic"
    assert message.envelope.fields["Subject"] == "Testing publish to subscribed queues"
    assert "Message" not in message.envelope.fields
    # The sample's Message is "Hello world!", text, not JSON: the payload is refused as such.
    with pytest.raises(PoisonMessage, match="Message is not JSON") as caught:
        _ = message.json
    assert caught.value.code == "malformed_json"


def test_the_eventbridge_sample_is_read_as_its_detail_under_its_id() -> None:
    (message,) = parse_sqs_event(
        sqs_event(sqs_record(_body("eventbridge-event.json"))), envelope="eventbridge"
    )
    assert message.delivery_id == "6a7e8feb-b491-4cf7-a9f1-bf3703467718"
    assert message.json == {"instance-id": "i-1234567890abcdef0", "state": "terminated"}
    assert message.envelope.fields["source"] == "aws.ec2"
    assert message.envelope.fields["detail-type"] == "EC2 Instance State-change Notification"


def test_the_s3_samples_are_a_record_under_bucket_key_sequencer_and_a_test_event() -> None:
    sample = aws_document("s3-event-notification.json")
    put, test = (
        sqs_record(_body("s3-event-notification.json")),
        sqs_record(_body("s3-test-event.json")),
    )
    (message,) = parse_sqs_event(sqs_event(put, test), envelope="s3")
    assert message.delivery_id == "amzn-s3-demo-bucket/HappyFace.jpg#0055AED6DCD90281E5"
    assert message.json == sample["Records"][0]


@pytest.mark.parametrize(
    ("built", "sample"),
    [
        (sns_notification({"a": 1}, subject="s"), "sns-notification-in-sqs.json"),
        (eventbridge_event({"a": "1"}), "eventbridge-event.json"),
        (s3_notification(("b", "k", "01")), "s3-event-notification.json"),
        (s3_test_event(), "s3-test-event.json"),
    ],
)
def test_the_kits_bodies_have_the_samples_shapes(built: str, sample: str) -> None:
    assert shape_problems(aws_document(sample), json.loads(built)) == []


# ---- SNS ----------------------------------------------------------------------------------


def _counting(aws: AppState, topics: list[str | None]) -> Any:
    """A decision that counts its commits on the order's item (ADD: a second commit shows)."""

    def apply(order: dict[str, Any], uow: UnitOfWork) -> None:
        envelope = current_envelope()
        topics.append(None if envelope is None else envelope.fields.get("TopicArn"))
        aws.count_applied(uow, order["order_id"])

    return apply


def test_sns_redelivery_under_a_new_sqs_message_id_commits_once_with_no_key(
    aws: AppState,
) -> None:
    topics: list[str | None] = []
    consumer = aws.consumer("sns-orders", model=dict, decide=_counting(aws, topics), envelope="sns")
    body = sns_notification({"order_id": "o-1"}, message_id="n-1")
    first, again = sqs_record(body), sqs_record(body)
    assert first["messageId"] != again["messageId"]
    assert consumer.handle(sqs_event(first), None) == {"batchItemFailures": []}
    assert consumer.handle(sqs_event(again), None) == {"batchItemFailures": []}
    assert aws.applied("o-1") == 1
    assert set(aws.inbox_records("sns-orders")) == {f"{SENDER_ID}/n-1"}
    assert set(topics) == {"arn:aws:sns:us-east-1:123456789012:orders"}


def test_without_the_envelope_the_same_redelivery_applies_twice(aws: AppState) -> None:
    """What the envelope fixes: keyed by the SQS messageId, SNS's redelivery is new."""
    topics: list[str | None] = []
    consumer = aws.consumer("bare", model=_notification_message, decide=_counting(aws, topics))
    body = sns_notification({"order_id": "o-1"}, message_id="n-1")
    consumer.handle(sqs_event(sqs_record(body)), None)
    consumer.handle(sqs_event(sqs_record(body)), None)
    assert aws.applied("o-1") == 2
    assert topics == [None, None]


def _notification_message(document: dict[str, Any]) -> dict[str, Any]:
    """The unwrapping a team writes by hand without the envelope."""
    message: dict[str, Any] = json.loads(document["Message"])
    return message


def test_raw_message_delivery_is_the_message_under_the_sqs_message_id() -> None:
    record = sqs_record({"order_id": "o-1"}, message_id="m-1")
    (message,) = parse_sqs_event(sqs_event(record), envelope="sns")
    assert (message.delivery_id, message.json, message.envelope) == (
        "m-1",
        {"order_id": "o-1"},
        None,
    )


def test_key_extractors_read_the_notifications_attributes(aws: AppState) -> None:
    applied: list[str] = []

    def key(payload: Any) -> str:
        envelope = current_envelope()
        assert envelope is not None
        return envelope.attributes["order-id"]

    consumer = aws.consumer(
        "sns-keyed", model=dict, decide=lambda d, u: applied.append("x"), key=key, envelope="sns"
    )
    one = sns_notification({"n": 1}, attributes={"order-id": "o-7"})
    two = sns_notification({"n": 1}, attributes={"order-id": "o-7"})  # another MessageId
    consumer.handle(sqs_event(sqs_record(one), sqs_record(two)), None)
    assert set(aws.inbox_records("sns-keyed")) == {"o-7"}
    assert current_envelope() is None  # only inside the calls


def test_an_idempotency_key_among_the_notifications_attributes_is_the_key() -> None:
    body = sns_notification({"n": 1}, attributes={"idempotency-key": "k-1"})
    (message,) = parse_sqs_event(sqs_event(sqs_record(body)), envelope="sns")
    assert KeyStrategy().message_key(message) == f"{SENDER_ID}/k-1"
    # The body's attributes are the envelope's, never the message's own.
    assert message.envelope.attributes == {"idempotency-key": "k-1"}
    assert message.attributes == {}


def test_a_body_cannot_set_the_attributes_the_library_reads_on_the_message() -> None:
    """A dead letter's `inbox-*` attributes in a notification's body stay the envelope's: the
    body cannot name a key to dead-letter under, nor an original sender."""
    forged = {"inbox-message-key": "AIDAVICTIM/k", "inbox-sender": "AIDAVICTIM"}
    body = sns_notification({"n": 1}, message_id="n-1", attributes=forged)
    (message,) = parse_sqs_event(sqs_event(sqs_record(body)), envelope="sns")
    assert message.attributes == {} and message.sender == SENDER_ID
    assert fallback_key(message) == f"{SENDER_ID}/n-1"


def _relayed_event(resources: Any) -> str:
    event = json.loads(eventbridge_event({"n": 1}))
    return json.dumps({**event, "resources": resources})


def test_an_events_outbox_message_id_in_its_resources_is_its_attribute() -> None:
    body = _relayed_event(
        ["arn:aws:ec2:us-west-2:123456789012:instance/i-1", "outbox-message-id:m-7"]
    )
    (message,) = parse_sqs_event(sqs_event(sqs_record(body)), envelope="eventbridge")
    assert message.envelope.attributes == {"outbox-message-id": "m-7"}
    assert KeyStrategy().message_key(message) == f"{SENDER_ID}/m-7"


@pytest.mark.parametrize(
    "resources", [[], ["outbox-message-id:"], ["outbox-message-id"], ["other:m-7"], "x", None]
)
def test_an_event_without_an_outbox_message_id_adds_no_attribute(resources: Any) -> None:
    (message,) = parse_sqs_event(
        sqs_event(sqs_record(_relayed_event(resources))), envelope="eventbridge"
    )
    assert message.envelope is None or "outbox-message-id" not in message.envelope.attributes
    assert KeyStrategy().message_key(message) == f"{SENDER_ID}/{message.delivery_id}"


def test_the_sqs_messages_own_attribute_wins_over_the_events() -> None:
    own = {"outbox-message-id": {"stringValue": "own", "dataType": "String"}}
    record = sqs_record(_relayed_event(["outbox-message-id:m-7"]), message_attributes=own)
    (message,) = parse_sqs_event(sqs_event(record), envelope="eventbridge")
    assert KeyStrategy().message_key(message) == f"{SENDER_ID}/own"


def test_two_deliveries_of_a_relayed_event_under_two_ids_commit_once(aws: AppState) -> None:
    applied: list[Any] = []
    consumer = aws.consumer(
        "bus-fed", model=dict, decide=lambda d, u: applied.append(d), envelope="eventbridge"
    )
    event = json.loads(_relayed_event(["outbox-message-id:m-7"]))
    again = {**event, "id": "another-event-id"}  # EventBridge gives every put a new id
    bodies = [json.dumps(event), json.dumps(again)]
    consumer.handle(sqs_event(*(sqs_record(b) for b in bodies)), None)
    assert set(aws.inbox_records("bus-fed")) == {f"{SENDER_ID}/m-7"} and len(applied) == 1


# ---- bodies that are not their envelope ---------------------------------------------------

NOT_SNS = [
    json.dumps({"Type": "Notification", "Message": "{}"}),  # no MessageId, no TopicArn
    json.dumps({**json.loads(sns_notification({})), "Message": 5}),
]
NOT_EVENTBRIDGE = [
    json.dumps({"detail": {}}),
    "not json",
    json.dumps([1, 2]),
    json.dumps({**json.loads(eventbridge_event({})), "id": None}),
]
NOT_S3 = [
    json.dumps({"Records": "x"}),
    json.dumps({"Records": [{"eventSource": "aws:s3"}]}),
    "{",
]


@pytest.mark.parametrize(
    ("envelope", "body"),
    [("sns", b) for b in NOT_SNS]
    + [("eventbridge", b) for b in NOT_EVENTBRIDGE]
    + [("s3", b) for b in NOT_S3],
)
def test_a_body_that_is_not_its_envelope_is_dead_lettered_whole(
    aws: AppState, envelope: Any, body: str
) -> None:
    applied: list[Any] = []
    consumer = aws.consumer(
        "wrapped", model=dict, decide=lambda d, u: applied.append(d), envelope=envelope
    )
    record = sqs_record(body)
    assert consumer.handle(sqs_event(record), None) == {"batchItemFailures": []}
    (dead,) = aws.dead_letters()
    assert dead["Body"] == body
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "envelope_mismatch"
    assert applied == []


def test_an_sns_message_the_model_refuses_is_poison_under_its_message_id(aws: AppState) -> None:
    def model(document: Any) -> Any:
        raise ValueError("no")

    consumer = aws.consumer("strict", model=model, decide=lambda d, u: None, envelope="sns")
    body = sns_notification({"n": 1}, message_id="n-9")
    consumer.handle(sqs_event(sqs_record(body)), None)
    (dead,) = aws.dead_letters()
    assert dead["Body"] == body
    attributes = dead["MessageAttributes"]
    assert attributes["inbox-error-code"]["StringValue"] == "invalid_payload"
    assert attributes["inbox-message-key"]["StringValue"] == f"{SENDER_ID}/n-9"
    assert attributes["inbox-sender"]["StringValue"] == SENDER_ID


def test_a_redriven_dead_letter_is_read_through_the_same_envelope(aws: AppState) -> None:
    attempts: list[int] = []

    def flaky(order: dict[str, Any], uow: UnitOfWork) -> None:
        attempts.append(1)
        if len(attempts) == 1:
            from lambda_inbox import PoisonMessage

            raise PoisonMessage("not yet")
        uow.put(aws.domain, {"pk": "ORDER#o-1", "sk": "A"})

    consumer = aws.consumer("redrive", model=dict, decide=flaky, envelope="sns")
    consumer.handle(sqs_event(sqs_record(sns_notification({"o": 1}, message_id="n-5"))), None)
    (dead,) = aws.dead_letters()
    attributes = {
        name: {"stringValue": value["StringValue"], "dataType": value["DataType"]}
        for name, value in dead["MessageAttributes"].items()
    }
    redriven = sqs_record(dead["Body"], message_attributes=attributes)
    assert consumer.handle(sqs_event(redriven), None) == {"batchItemFailures": []}
    assert aws.inbox_records("redrive")[f"{SENDER_ID}/n-5"]["status"] == "COMPLETED"


# ---- S3 -----------------------------------------------------------------------------------


def test_an_s3_test_event_is_acknowledged_with_no_record_and_no_call(aws: AppState) -> None:
    applied: list[Any] = []
    consumer = aws.consumer("s3", model=dict, decide=lambda d, u: applied.append(d), envelope="s3")
    assert consumer.handle(sqs_event(sqs_record(s3_test_event())), None) == {
        "batchItemFailures": []
    }
    assert applied == [] and aws.inbox_records("s3") == {}
    aws.assert_dlq_empty()


def test_several_s3_records_commit_each_and_a_failure_redelivers_the_sqs_message(
    aws: AppState,
) -> None:
    failing = {"k2"}

    def apply(record: dict[str, Any], uow: UnitOfWork) -> None:
        name = record["s3"]["object"]["key"]
        if name in failing:
            raise RuntimeError("outage")
        uow.update(
            aws.domain, {"pk": f"ORDER#{name}", "sk": "A"}, "ADD applied :one", values={":one": 1}
        )

    consumer = aws.consumer("s3", model=dict, decide=apply, envelope="s3")
    body = s3_notification(("b", "k1", "01"), ("b", "k2", "02"), ("b", "k3", "03"))
    record = sqs_record(body)
    response = consumer.handle(sqs_event(record, sqs_record(s3_test_event())), None)
    assert response == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert [aws.applied(k) for k in ("k1", "k2", "k3")] == [1, 0, 1]
    failing.clear()
    assert consumer.handle(sqs_event(delivered_again(record)), None) == {"batchItemFailures": []}
    assert [aws.applied(k) for k in ("k1", "k2", "k3")] == [1, 1, 1]  # the others duplicates
    assert set(aws.inbox_records("s3")) == {f"{SENDER_ID}/b/k{n}#0{n}" for n in (1, 2, 3)}


def test_the_response_names_each_sqs_message_once() -> None:
    (message,) = parse_sqs_event(sqs_event(sqs_record({"a": 1}, message_id="m")))
    results = [MessageResult(message, Outcome.FAILED), MessageResult(message, Outcome.FAILED)]
    assert sqs_response(results) == {"batchItemFailures": [{"itemIdentifier": "m"}]}


# ---- configuration and cold start ---------------------------------------------------------


def test_an_unknown_envelope_is_a_configuration_error(aws: AppState) -> None:
    with pytest.raises(ConfigurationError, match="envelope must be"):
        aws.consumer("x", model=dict, decide=lambda d, u: None, envelope="kafka")


def test_a_consumer_without_an_envelope_loads_none_of_it() -> None:
    program = (
        "import sys, lambda_inbox; from lambda_inbox._sources.sqs import parse_sqs_event; "
        "parse_sqs_event({'Records': [{'messageId': 'm', 'body': '{}'}]}); "
        "print(sorted(m for m in sys.modules if 'envelopes' in m or 'parser.models' in m))"
    )
    path = f"{REPO_ROOT / 'layers' / 'inbox'}"
    out = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": path},
    ).stdout.strip()
    assert out == "[]"


def test_a_sample_changed_is_caught_by_the_shape_check() -> None:
    broken = json.loads(sns_notification({}))
    broken["TopicArn"] = 5
    assert shape_problems(aws_document("sns-notification-in-sqs.json"), broken)
    missing = copy.deepcopy(json.loads(s3_notification(("b", "k", "1"))))
    del missing["Records"][0]["s3"]["object"]["sequencer"]
    assert shape_problems(aws_document("s3-event-notification.json"), missing)
