"""Payloads stay out of logs: an invalid payload is described by its fields, never its values."""

from __future__ import annotations

import io
import json
import logging

from aws_lambda_powertools import Logger
from pydantic import BaseModel, Field

from devkit.app_state import AppState
from devkit.events import sqs_event, sqs_record
from lambda_inbox import Observability, Outcome, UnitOfWork
from lambda_inbox.wire import parse_sqs_event

SECRET = "4111-1111-1111-1111"


class Payment(BaseModel):
    event_id: str
    card_number: str = Field(pattern=r"^tok_")
    amount_cents: int = Field(gt=0)


def never(payment: Payment, uow: UnitOfWork) -> None:
    raise AssertionError("an invalid payload must not reach decide")


def test_an_invalid_payload_is_logged_and_dead_lettered_without_its_values(aws: AppState) -> None:
    logs = io.StringIO()
    logger = Logger(service="payload-privacy", logger_handler=logging.StreamHandler(logs))
    inbox = aws.consumer(
        "payments",
        model=Payment,
        decide=never,
        key="event_id",
        observability=Observability(logger=logger),
    )
    body = json.dumps({"event_id": "p-1", "card_number": SECRET, "amount_cents": -5})

    (result,) = inbox.process(parse_sqs_event(sqs_event(sqs_record(body))))

    assert (result.outcome, result.error_code) == (Outcome.DEAD_LETTERED, "invalid_payload")
    assert "card_number: String should match pattern" in result.detail
    assert "amount_cents: Input should be greater than 0" in result.detail
    logged = logs.getvalue()
    assert '"error_code":"invalid_payload"' in logged
    assert "card_number" in logged  # the field is named...
    assert SECRET not in logged  # ...its value is not
    (letter,) = aws.dead_letters()
    assert letter["Body"] == body  # the DLQ keeps the original, byte for byte
    assert SECRET not in letter["MessageAttributes"]["inbox-error"]["StringValue"]
