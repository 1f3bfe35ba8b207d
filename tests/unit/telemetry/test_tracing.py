"""Optional tracing: with a Powertools Tracer, every commit runs in an `## inbox commit` subsegment."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools import Tracer
from pydantic import BaseModel

from devkit.app_state import AppState
from devkit.events import sqs_event, sqs_record
from lambda_inbox import Observability, Outcome, UnitOfWork
from lambda_inbox.wire import parse_sqs_event


class Note(BaseModel):
    event_id: str


def write_note(note: Note, uow: UnitOfWork) -> None:
    uow.put("domain", {"pk": f"NOTE#{note.event_id}", "sk": "NOTE"})


class RecordingSubsegment:
    def __init__(self, name: str, log: list[dict[str, Any]]) -> None:
        self.entry: dict[str, Any] = {"name": name}
        log.append(self.entry)

    def put_annotation(self, key: str, value: Any) -> None:
        self.entry[key] = value

    def put_metadata(self, key: str, value: Any) -> None:
        self.entry[key] = value


def test_commits_are_traced_in_subsegments(aws: AppState, monkeypatch: pytest.MonkeyPatch) -> None:
    tracer = Tracer(service="tests", disabled=True)
    spans: list[dict[str, Any]] = []

    class Recorder:
        def __init__(self, name: str) -> None:
            self.subsegment = RecordingSubsegment(name, spans)

        def __enter__(self) -> RecordingSubsegment:
            return self.subsegment

        def __exit__(self, *_: object) -> None:
            return None

    # The X-Ray provider is replaced at its own boundary: the inbox code under test is unchanged.
    monkeypatch.setattr(tracer.provider, "in_subsegment", Recorder)
    inbox = aws.consumer(
        "notes",
        config={"dead_letter_queue_url": None},
        model=Note,
        decide=write_note,
        key="event_id",
        observability=Observability(tracer=tracer),
    )

    records = [sqs_record(json.dumps({"event_id": f"n-{n}"})) for n in range(3)]
    results = inbox.process(parse_sqs_event(sqs_event(*records)))

    assert {result.outcome for result in results} == {Outcome.COMMITTED}
    assert spans == [{"name": "## inbox commit", "consumer": "notes", "messages": 3}]
