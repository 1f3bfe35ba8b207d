"""Powertools' parser envelopes in `InboxConsumer(envelope=...)`: each means the envelope name of
docs/concepts.md it stands for, with that name's delivery identity (the envelope object is never
called), and a consumer that passes a name loads none of Powertools' parser. In-memory AWS."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parser import envelopes
from pydantic import BaseModel

from devkit.app_state import AppState
from devkit.paths import REPO_ROOT
from lambda_inbox import ConfigurationError, UnitOfWork
from lambda_inbox_tools.testing import (
    dynamodb_stream_event,
    dynamodb_stream_record,
    kinesis_event,
    kinesis_record,
    sqs_event,
    sqs_record,
)
from lambda_inbox_tools.testing.producers import eventbridge_event, sns_notification


def _counting(aws: AppState, seen: list[Any]) -> Any:
    def apply(order: Any, uow: UnitOfWork) -> None:
        seen.append(order)
        aws.count_applied(uow, order["order_id"])

    return apply


@pytest.mark.parametrize(
    "envelope",
    ["sns", envelopes.SnsSqsEnvelope, envelopes.SnsSqsEnvelope()],
    ids=["name", "class", "instance"],
)
def test_sns_sqs_envelope_is_sns_a_redelivery_under_a_new_sqs_id_is_a_duplicate(
    aws: AppState, envelope: Any
) -> None:
    seen: list[Any] = []
    consumer = aws.consumer("orders", model=dict, decide=_counting(aws, seen), envelope=envelope)
    body = sns_notification({"order_id": "o-1"}, message_id="n-1")
    first, again = sqs_record(body), sqs_record(body)
    assert first["messageId"] != again["messageId"]
    (committed,) = consumer.process(consumer.sources[1].messages(sqs_event(first)))
    (duplicate,) = consumer.process(consumer.sources[1].messages(sqs_event(again)))
    assert (committed.outcome, duplicate.outcome) == ("committed", "duplicate")
    assert committed.message_key == duplicate.message_key
    assert str(committed.message_key).endswith("/n-1")  # the notification's MessageId
    assert seen[0] == {"order_id": "o-1"}  # the notification's Message
    assert aws.applied("o-1") == 1


@pytest.mark.parametrize("envelope", ["eventbridge", envelopes.EventBridgeEnvelope])
def test_eventbridge_envelope_is_eventbridge(aws: AppState, envelope: Any) -> None:
    seen: list[Any] = []
    consumer = aws.consumer("rules", model=dict, decide=_counting(aws, seen), envelope=envelope)
    body = eventbridge_event({"order_id": "o-2"}, event_id="e-1")
    for record in (sqs_record(body), sqs_record(body)):
        consumer.handle(sqs_event(record))
    assert seen[0] == {"order_id": "o-2"}  # the event's detail
    assert aws.applied("o-2") == 1
    assert [key.rpartition("/")[2] for key in aws.inbox_records("rules")] == ["e-1"]


def test_sqs_and_kinesis_envelopes_are_the_body_itself(aws: AppState) -> None:
    seen: list[Any] = []
    for name, envelope in (
        ("q", envelopes.SqsEnvelope),
        ("k", envelopes.KinesisDataStreamEnvelope),
    ):
        consumer = aws.consumer(name, model=dict, decide=_counting(aws, seen), envelope=envelope)
        consumer.handle(sqs_event(sqs_record({"order_id": f"{name}-1"})))
        consumer.handle(kinesis_event([kinesis_record(1, {"order_id": f"{name}-2"})]))
    assert [order["order_id"] for order in seen] == ["q-1", "q-2", "k-1", "k-2"]


class Item(BaseModel):
    order_id: str
    qty: Decimal


def test_dynamodb_stream_envelope_applies_the_model_to_each_image(aws: AppState) -> None:
    seen: list[Any] = []

    def decide(images: dict[str, Item | None], uow: UnitOfWork) -> None:
        seen.append(images)

    consumer = aws.consumer(
        "s", model=Item, decide=decide, envelope=envelopes.DynamoDBStreamEnvelope
    )
    inserted = dynamodb_stream_record(1, {"order_id": "o"}, new_image={"order_id": "o", "qty": 2})
    consumer.handle(dynamodb_stream_event([inserted]))
    assert seen == [{"NewImage": Item(order_id="o", qty=Decimal(2)), "OldImage": None}]


@pytest.mark.parametrize(
    ("envelope", "says"),
    [
        (envelopes.SnsEnvelope, "for a function SNS invokes"),
        (envelopes.ApiGatewayEnvelope, "ApiGatewayEnvelope"),
        (type("Mine", (envelopes.SnsSqsEnvelope,), {}), "a subclass of SnsSqsEnvelope"),
    ],
)
def test_other_envelopes_are_refused_saying_why(aws: AppState, envelope: Any, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        aws.consumer("c", model=dict, decide=lambda p, u: None, envelope=envelope)


def test_a_consumer_naming_its_envelope_loads_none_of_powertools_parser() -> None:
    program = (
        "import sys\nfrom lambda_inbox import InboxConfig, InboxConsumer\n"
        "InboxConsumer('c', model=dict, decide=lambda p, u: None, envelope='sns',"
        " config=InboxConfig(consumer='c', inbox_table='t'))\n"
        "print(sorted(m for m in sys.modules if m.startswith("
        "'aws_lambda_powertools.utilities.parser')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO_ROOT / "layers" / "inbox"), "AWS_DEFAULT_REGION": "us-east-1"},
    ).stdout.strip()
    assert out == "[]"
