"""How `InboxConsumer` reads a payload into its `model`: a pydantic model's `model_validate`
(an override of it kept, a model completed or rebuilt after the consumer is made validating
with its new rules), or any callable."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from devkit.app_state import AppState
from devkit.events import sqs_event, sqs_record
from lambda_inbox import UnitOfWork
from lambda_inbox._options import parser


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
    parse = parser(Plain)
    assert parse({"seat": "1A", "nights": "2"}) == Plain.model_validate({"seat": "1A", "nights": 2})
    with pytest.raises(ValidationError):
        parse({"seat": "1A"})


def test_an_override_of_model_validate_is_kept() -> None:
    assert parser(Overriding)({"seat": "1a"}).seat == "1A"


def test_a_model_not_complete_when_the_consumer_is_made_validates() -> None:
    assert not Later.__pydantic_complete__  # `Stay` was not defined when `Later` was
    parse = parser(Later)
    assert parse({"stay": {"nights": 1}}).stay.nights == 1


def test_a_model_rebuilt_after_the_consumer_is_made_validates_with_its_new_rules() -> None:
    """The fix of a payload dead-lettered for an unknown field, in the same process: the model
    is rebuilt to ignore extra fields, and the parser made before sees that."""

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        seat: str

    parse = parser(Strict)
    with pytest.raises(ValidationError):
        parse({"seat": "1A", "gift_wrap": True})
    Strict.model_config["extra"] = "ignore"
    Strict.model_rebuild(force=True)
    assert parse({"seat": "1A", "gift_wrap": True}).seat == "1A"


def test_a_callable_is_called_as_it_is() -> None:
    assert parser(dict)({"a": 1}) == {"a": 1}


def test_the_consumer_decides_on_the_validated_model(aws: AppState) -> None:
    seen: list[Overriding] = []

    def decide(booking: Overriding, uow: UnitOfWork) -> None:
        seen.append(booking)

    inbox = aws.consumer("payload-models", model=Overriding, decide=decide, key="seat")
    assert inbox.handle(sqs_event(sqs_record('{"seat": "2b"}'))) == {"batchItemFailures": []}
    assert [booking.seat for booking in seen] == ["2B"]
