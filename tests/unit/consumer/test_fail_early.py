"""Mistakes found when the consumer is built, or named where they surface: a model that is not a
type or callable, a `decide` that cannot take `(payload, uow)`, an unknown envelope, a missing
table (named with the environment variable it came from), and a `missing_key` on an SNS or
EventBridge body that names `envelope=`. In-memory AWS (`devkit.memory_aws`)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from devkit.app_state import AppState
from lambda_inbox import ConfigurationError, CreatesItem, Decide, Leased, Outcome, UnitOfWork
from lambda_inbox.wire import parse_sqs_event
from lambda_inbox_tools.testing import delivered_again, sqs_event, sqs_record
from lambda_inbox_tools.testing.producers import eventbridge_event, sns_notification


@pytest.fixture
def aws(in_memory_aws: AppState) -> AppState:
    return in_memory_aws


def _decide(payload: Any, uow: UnitOfWork) -> None:
    """A decision that writes nothing."""


def record_order(order: Any) -> None:
    """A decide function missing its unit of work."""


# ---- at construction -------------------------------------------------------------------------


@pytest.mark.parametrize("model", [42, "Order", None])
def test_a_model_that_is_not_a_type_or_callable_is_refused(aws: AppState, model: Any) -> None:
    with pytest.raises(
        ConfigurationError, match=r"model must be .* not .*\(" + type(model).__name__
    ):
        aws.consumer("c", model=model, decide=_decide)


def test_a_model_callable_that_cannot_take_the_document_is_refused(aws: AppState) -> None:
    def build(document: Any, extra: Any) -> Any:
        return document

    with pytest.raises(ConfigurationError, match=r"model must take \(document\); .*build"):
        aws.consumer("c", model=build, decide=_decide)


def test_models_that_are_classes_or_builtins_are_accepted(aws: AppState) -> None:
    for model in (dict, str, lambda document: document):
        aws.consumer("c", model=model, decide=_decide)


def test_a_decide_that_cannot_take_payload_and_uow_is_refused(aws: AppState) -> None:
    message = r"decide must take \(payload, uow\); record_order\(order: 'Any'\) -> 'None' cannot"
    with pytest.raises(ConfigurationError, match=message):
        aws.consumer("c", model=dict, decide=record_order)
    with pytest.raises(ConfigurationError, match="decide must take"):
        aws.consumer("c", model=dict, decide=Decide(record_order))  # type: ignore[arg-type]


def test_an_on_condition_failed_that_cannot_take_three_arguments_is_refused(
    aws: AppState,
) -> None:
    with pytest.raises(
        ConfigurationError, match=r"on_condition_failed must take \(payload, failed"
    ):
        wrong: Any = _decide
        aws.consumer("c", model=dict, decide=Decide(_decide, on_condition_failed=wrong))


def test_decide_functions_with_defaults_or_star_args_are_accepted(aws: AppState) -> None:
    def with_default(payload: Any, uow: UnitOfWork, extra: int = 0) -> None: ...

    def variadic(*arguments: Any) -> None: ...

    for decide in (with_default, variadic, _decide):
        aws.consumer("c", model=dict, decide=decide)


def test_a_key_callable_or_side_effect_of_the_wrong_arity_is_refused(aws: AppState) -> None:
    def two(payload: Any, other: Any) -> str:
        return "k"

    with pytest.raises(ConfigurationError, match=r"key must take \(payload\); .*two"):
        aws.consumer("c", model=dict, decide=_decide, key=two)
    with pytest.raises(ConfigurationError, match=r"side_effect must take \(payload, lease\)"):
        one_argument: Any = record_order
        aws.consumer("c", model=dict, decide=_decide, leased=Leased(one_argument))


@pytest.mark.parametrize("envelope", ["kafka", "SNS", 3])
def test_an_unknown_envelope_lists_the_names_and_powertools_envelopes(
    aws: AppState, envelope: Any
) -> None:
    with pytest.raises(
        ConfigurationError, match=r'"sns", "eventbridge", "s3", None, or .*SnsSqsEnv'
    ):
        aws.consumer("c", model=dict, decide=_decide, envelope=envelope)


# ---- a missing table, named --------------------------------------------------------------------


def test_a_missing_inbox_table_is_named_with_its_environment_variable(
    aws: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new batch meets it in its transaction; a redelivered one in its read first. The
    consumer's log lines name it too."""
    monkeypatch.setenv("INBOX_TABLE", "inbox-misnamed")
    config = {"inbox_table": "inbox-misnamed"}
    consumer = aws.consumer("c", model=dict, decide=_decide, config=config)
    named = "table 'inbox-misnamed' (INBOX_TABLE) does not exist"
    record = sqs_record({"a": 1})
    lines = Lines()
    logger = consumer.telemetry.logger
    # The service's logger is process-wide: an earlier test may have quietened it.
    level = logger.log_level
    logger.setLevel("INFO")
    logger.addHandler(lines)
    try:
        (new,) = consumer.process(parse_sqs_event(sqs_event(record)))
        (again,) = consumer.process(parse_sqs_event(sqs_event(delivered_again(record))))
    finally:
        logger.removeHandler(lines)  # type: ignore[attr-defined]  # passed to logging.Logger
        logger.setLevel(level)
    assert (new.outcome, new.error_code) == (Outcome.FAILED, "dynamodb_unavailable")
    assert (again.outcome, again.error_code) == (Outcome.FAILED, "inbox_unavailable")
    assert named in new.detail
    assert named in again.detail
    logged = {level for level, text in lines.records if named in text}
    assert {"WARNING", "ERROR"} <= logged  # each message's line, and the failed read's


def test_a_missing_domain_table_is_named_with_the_inbox_table(
    aws: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDERS_TABLE", "orders-misnamed")
    monkeypatch.setenv("INBOX_TABLE", aws.inbox)

    def decide(payload: Any, uow: UnitOfWork) -> None:
        uow.put("orders-misnamed", {"pk": "o-1", "sk": "A"})

    consumer = aws.consumer("c", model=dict, decide=decide)
    (result,) = consumer.process(_messages({"a": 1}))
    assert result.outcome is Outcome.FAILED
    assert result.error_code == "dynamodb_unavailable"
    assert "'inbox' (INBOX_TABLE) or 'orders-misnamed' (ORDERS_TABLE) does not exist" in (
        result.detail
    )


class Lines(logging.Handler):
    """The log records a logger emits: level name and text, its extra fields included."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.levelname, f"{record.getMessage()} {record.__dict__}"))


def _messages(body: dict[str, Any] | str) -> Any:
    return parse_sqs_event(sqs_event(sqs_record(body)))


# ---- the forgotten envelope --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "name"),
    [
        (sns_notification({"order_id": "o-1"}, message_id="n-1"), "sns"),
        (eventbridge_event({"order_id": "o-1"}), "eventbridge"),
    ],
)
def test_missing_key_on_a_wrapped_body_names_the_envelope(
    aws: AppState, body: str, name: str
) -> None:
    consumer = aws.consumer("c", model=dict, decide=_decide, key="order_id")
    (result,) = consumer.process(_messages(body))
    assert result.error_code == "missing_key"
    assert f'pass envelope="{name}" to InboxConsumer' in result.detail


def test_missing_key_on_a_plain_body_suggests_no_envelope(aws: AppState) -> None:
    consumer = aws.consumer("c", model=dict, decide=_decide, key="order_id")
    (result,) = consumer.process(_messages({"id": "o-1"}))
    assert result.error_code == "missing_key"
    assert "envelope" not in result.detail


def test_a_creates_item_whose_item_cannot_take_the_payload_is_refused(aws: AppState) -> None:
    def shipment(order: Any, carrier: Any) -> dict[str, Any]:
        return {"pk": order["id"], "sk": carrier}

    with pytest.raises(ConfigurationError, match=r"CreatesItem's item must take \(payload\)"):
        aws.consumer("c", model=dict, decide=CreatesItem("domain", shipment))  # type: ignore[arg-type]
