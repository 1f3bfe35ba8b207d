"""EMF metrics of a batch: one count per outcome, transactions, commit latency, by consumer."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from pydantic import BaseModel, Field

from devkit.app_state import AppState
from devkit.emf import emf_records
from devkit.events import sqs_event, sqs_record
from lambda_inbox import ConditionFailures, Decide, InboxConsumer, Observability, UnitOfWork


class Booking(BaseModel):
    event_id: str
    seat: str
    fail: bool = False
    nights: int = Field(gt=0)


def book(booking: Booking, uow: UnitOfWork) -> None:
    if booking.fail:
        raise ConnectionError("the handler's dependency is down")
    uow.put(
        "domain",
        {"pk": f"SEAT#{booking.seat}", "sk": "BOOKING"},
        condition="attribute_not_exists(pk)",
        label="seat",
    )


def waitlist(booking: Booking, failed: ConditionFailures, uow: UnitOfWork) -> None:
    uow.put("domain", {"pk": f"SEAT#{booking.seat}", "sk": f"WAIT#{booking.event_id}"})


def consumer(aws: AppState, metrics: Metrics | None = None) -> InboxConsumer[Booking]:
    return aws.consumer(
        "bookings",
        model=Booking,
        decide=Decide(book, on_condition_failed=waitlist),
        key="event_id",
        observability=Observability(metrics=metrics),
    )


def body(event_id: str, seat: str, **extra: Any) -> str:
    return json.dumps({"event_id": event_id, "seat": seat, "nights": 1, **extra})


def test_a_batch_emits_one_count_per_outcome_and_its_commit_latency(
    aws: AppState, capsys: pytest.CaptureFixture[str]
) -> None:
    inbox = consumer(aws)
    inbox.handle(sqs_event(sqs_record(body("e-0", "1A"))))
    capsys.readouterr()
    batch = sqs_event(
        sqs_record(body("e-0", "1A")),  # duplicate of the first batch
        sqs_record(body("e-1", "2B")),  # committed
        sqs_record(body("e-2", "1A")),  # seat taken: waitlisted (business outcome)
        sqs_record("{not json"),  # poison
        sqs_record(body("e-3", "3C", fail=True)),  # handler error: reported for redelivery
    )
    response = inbox.handle(batch)

    assert len(response["batchItemFailures"]) == 1
    (record,) = emf_records(capsys.readouterr().out)
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert all("consumer" in dimensions for dimensions in directive["Dimensions"])
    assert record["consumer"] == "bookings"
    for name in (
        "MessagesDuplicate",
        "MessagesCommitted",
        "MessagesBusinessOutcome",
        "MessagesDeadLettered",
        "MessagesFailed",
    ):
        assert record[name] == [1.0], name
    assert "MessagesSkipped" not in record
    # The poison had the inbox keys read first (the duplicate was found there); one cancelled
    # group (the taken seat), then the regrouped commit.
    assert record["DuplicateReads"] == [1.0]
    assert record["Transactions"] == [2.0]
    assert record["TransactionsCancelled"] == [1.0]
    assert record["TransactionsTransient"] == [0.0]
    latencies = record["CommitLatency"]
    assert len(latencies) == 2 and all(value > 0 for value in latencies)
    units = {metric["Name"]: metric["Unit"] for metric in directive["Metrics"]}
    assert units["CommitLatency"] == "Milliseconds" and units["MessagesCommitted"] == "Count"


def test_a_duplicate_found_by_the_commit_costs_a_cancelled_transaction(
    aws: AppState, capsys: pytest.CaptureFixture[str]
) -> None:
    inbox = consumer(aws)
    inbox.handle(sqs_event(sqs_record(body("e-0", "1A"))))
    capsys.readouterr()
    inbox.handle(sqs_event(sqs_record(body("e-0", "1A")), sqs_record(body("e-1", "2B"))))
    (record,) = emf_records(capsys.readouterr().out)
    assert "DuplicateReads" not in record  # nothing suggested a duplicate: no read
    assert record["MessagesDuplicate"] == [1.0] and record["MessagesCommitted"] == [1.0]
    assert record["Transactions"] == [2.0]
    assert record["TransactionsCancelled"] == [1.0]


def test_a_shared_metrics_instance_is_left_for_the_function_to_flush(
    aws: AppState, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics = Metrics(namespace="Bookings")
    inbox = consumer(aws, metrics)
    inbox.handle(sqs_event(sqs_record(body("e-9", "9Z"))))
    assert emf_records(capsys.readouterr().out) == []  # not flushed by the inbox

    metrics.flush_metrics()  # what @metrics.log_metrics does at the end of the handler
    (record,) = emf_records(capsys.readouterr().out)
    assert record["MessagesCommitted"] == [1.0]
    assert record["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Bookings"


def test_two_consumers_in_one_process_keep_their_own_dimension(
    aws: AppState, capsys: pytest.CaptureFixture[str], recwarn: pytest.WarningsRecorder
) -> None:
    """Powertools' `Metrics` share one metric set per process. A consumer owns an ephemeral
    one, so another consumer's batch in flight on another thread (here: its dimension and a
    metric already added to the shared set) neither overwrites this consumer's `consumer`
    dimension, nor gets flushed with it, nor makes Powertools warn."""
    in_flight = Metrics(namespace="LambdaInbox")
    in_flight.add_dimension("consumer", "waitlists")
    in_flight.add_metric("MessagesCommitted", "Count", 7)
    try:
        consumer(aws).handle(sqs_event(sqs_record(body("e-1", "1A"))))
        (record,) = emf_records(capsys.readouterr().out)
        assert record["consumer"] == "bookings" and record["MessagesCommitted"] == [1.0]
        assert [str(w.message) for w in recwarn if "Dimension" in str(w.message)] == []
    finally:
        in_flight.clear_metrics()


def _emf_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith('{"_aws"')]


def _without_timestamp(line: str) -> str:
    return re.sub(r'"Timestamp":\d+,', "", line, count=1)


def test_the_batch_record_is_the_one_powertools_own_flush_writes(
    aws: AppState, capsys: pytest.CaptureFixture[str]
) -> None:
    """The owned metrics are written from the batch's set through Powertools'
    `serialize_metric_set`, not `add_metric` per metric: the line is the one `add_metric` and
    `flush_metrics` write for the same values, character for character but its timestamp."""
    inbox = consumer(aws)
    inbox.handle(sqs_event(sqs_record(body("e-1", "1A")), sqs_record(body("e-2", "2B"))))
    (line,) = _emf_lines(capsys.readouterr().out)
    latency = json.loads(line)["CommitLatency"][0]

    owned = inbox.telemetry.metrics
    reference = EphemeralMetrics(namespace=owned.namespace, service=owned.service)
    reference.set_default_dimensions(consumer="bookings")
    counts = {"MessagesCommitted": 2, "Transactions": 1, "TransactionsCancelled": 0}
    for name, value in (counts | {"TransactionsTransient": 0}).items():
        reference.add_metric(name, MetricUnit.Count, value)
    reference.add_metric("CommitLatency", MetricUnit.Milliseconds, latency)
    reference.flush_metrics()
    (expected,) = _emf_lines(capsys.readouterr().out)
    assert _without_timestamp(line) == _without_timestamp(expected)


def test_disabled_metrics_write_nothing(
    aws: AppState, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    response = consumer(aws).handle(sqs_event(sqs_record(body("e-1", "1A"))))
    assert response == {"batchItemFailures": []}
    assert emf_records(capsys.readouterr().out) == []


def test_metrics_added_to_the_owned_set_are_written_with_the_batch(
    aws: AppState, capsys: pytest.CaptureFixture[str]
) -> None:
    inbox = consumer(aws)
    inbox.telemetry.metrics.add_metric("SeatsBooked", MetricUnit.Count, 3)
    inbox.handle(sqs_event(sqs_record(body("e-1", "1A"))))
    (record,) = emf_records(capsys.readouterr().out)
    assert record["SeatsBooked"] == [3.0] and record["MessagesCommitted"] == [1.0]
    assert record["consumer"] == "bookings"
    inbox.handle(sqs_event(sqs_record(body("e-2", "2B"))))
    (record,) = emf_records(capsys.readouterr().out)
    assert "SeatsBooked" not in record  # flushed with the first batch


@pytest.mark.parametrize("level", ["DEBUG", "INFO"])
def test_every_outcome_is_logged_at_debug_and_only_failures_above(
    aws: AppState, capsys: pytest.CaptureFixture[str], level: str
) -> None:
    logger = Logger(service=f"bookings-{level.lower()}", level=level)  # one logger per level
    inbox = aws.consumer(
        "bookings",
        model=Booking,
        decide=book,
        key="event_id",
        observability=Observability(logger=logger),
    )
    inbox.handle(sqs_event(sqs_record(body("e-1", "1A")), sqs_record("{not json")))
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    messages = {line["message"]: line for line in lines if "message" in line}
    assert "message dead_lettered: body is not JSON" in " ".join(messages)
    committed = messages.get("message committed")
    if level == "DEBUG":
        assert committed is not None and committed["message_key"] == "e-1"
    else:
        assert committed is None
