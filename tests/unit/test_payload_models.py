"""How `InboxConsumer` reads a payload into its `model`: a pydantic model's own validation
(what `model_validate` runs, called without its wrapper), an override of `model_validate`, a
model completed later, or any callable."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from devkit.app_state import AppState
from devkit.events import sqs_event, sqs_record
from lambda_inbox import UnitOfWork
from lambda_inbox.consumer import _parser


class Plain(BaseModel):
    seat: str
    nights: int


class Overriding(BaseModel):
    seat: str

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Overriding:
        return super().model_validate({"seat": str(obj["seat"]).upper()}, **options)


class Later(BaseModel):
    stay: Stay


class Stay(BaseModel):
    nights: int


def test_a_plain_model_is_validated_as_model_validate_would() -> None:
    parse = _parser(Plain)
    assert parse({"seat": "1A", "nights": "2"}) == Plain.model_validate({"seat": "1A", "nights": 2})
    with pytest.raises(ValidationError):
        parse({"seat": "1A"})


def test_an_override_of_model_validate_is_kept() -> None:
    assert _parser(Overriding)({"seat": "1a"}).seat == "1A"


def test_a_model_not_complete_when_the_consumer_is_made_validates() -> None:
    assert not Later.__pydantic_complete__  # `Stay` was not defined when `Later` was
    parse = _parser(Later)
    assert parse({"stay": {"nights": 1}}).stay.nights == 1


def test_a_callable_is_called_as_it_is() -> None:
    assert _parser(dict)({"a": 1}) == {"a": 1}


def test_the_consumer_decides_on_the_validated_model(aws: AppState) -> None:
    seen: list[Overriding] = []

    def decide(booking: Overriding, uow: UnitOfWork) -> None:
        seen.append(booking)

    inbox = aws.consumer("payload-models", model=Overriding, decide=decide, key="seat")
    assert inbox.handle(sqs_event(sqs_record('{"seat": "2b"}'))) == {"batchItemFailures": []}
    assert [booking.seat for booking in seen] == ["2B"]
