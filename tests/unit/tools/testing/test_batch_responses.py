"""AWS's rule for a handler's return (lambda_inbox_tools.batch_responses), the one function every
reader of a response uses: the local stack's pollers, the check, `event_after`, `failed_ids`,
`failed_offsets`, `failed_sequence_numbers` and `deliver_until_acknowledged`. Pinned to AWS's
"Success and failure conditions" (docs/aws-fidelity.md)."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_inbox_tools.batch_responses import batch_outcome
from lambda_inbox_tools.local.invoker import Invocation
from lambda_inbox_tools.local.kafka_poller import KafkaRecord, next_positions
from lambda_inbox_tools.local.sqs_poller import messages_to_delete
from lambda_inbox_tools.testing import (
    deliver_until_acknowledged,
    event_after,
    failed_ids,
    failed_offsets,
    failed_sequence_numbers,
    kafka_event,
    kafka_record,
    kinesis_event,
    kinesis_record,
    sqs_event,
    sqs_record,
)

IDS = ["m-1", "m-2", "m-3"]
#: What acknowledges the whole batch under ReportBatchItemFailures.
SUCCESSES: list[Any] = [None, {}, {"batchItemFailures": []}, {"batchItemFailures": None}, {"x": 1}]
#: What fails the whole batch under it.
MALFORMED: list[Any] = [
    "ok",
    [],
    {"batchItemFailures": "m-1"},
    {"batchItemFailures": [{"itemIdentifier": ""}]},
    {"batchItemFailures": [{"itemIdentifier": None}]},
    {"batchItemFailures": [{"itemIdentifer": "m-1"}]},
    {"batchItemFailures": [{"itemIdentifier": "m-9"}]},
    {"batchItemFailures": ["m-1"]},
]


@pytest.mark.parametrize("response", SUCCESSES)
def test_a_null_or_empty_response_acknowledges_the_whole_batch(response: Any) -> None:
    outcome = batch_outcome(response, IDS)
    assert outcome.complete_success and outcome.failed == ()


@pytest.mark.parametrize("response", MALFORMED)
def test_a_malformed_response_fails_the_whole_batch(response: Any) -> None:
    outcome = batch_outcome(response, IDS)
    assert outcome.whole and outcome.failed == tuple(IDS), outcome.why
    assert outcome.why.startswith("malformed")


@pytest.mark.parametrize("response", [*SUCCESSES, *MALFORMED, {"batchItemFailures": IDS[:1]}])
def test_without_the_setting_only_an_exception_fails_the_batch(response: Any) -> None:
    assert batch_outcome(response, IDS, reads_response=False).complete_success
    assert batch_outcome(response, IDS, raised=True, reads_response=False).whole
    assert batch_outcome(response, IDS, raised=True).failed == tuple(IDS)


def test_reported_items_fail_in_the_batchs_order() -> None:
    response = {"batchItemFailures": [{"itemIdentifier": "m-3"}, {"itemIdentifier": "m-1"}]}
    outcome = batch_outcome(response, IDS)
    assert (outcome.failed, outcome.whole) == (("m-1", "m-3"), False)


def test_the_pollers_read_through_the_one_rule() -> None:
    none = Invocation(None, None, 0.0)
    assert messages_to_delete(IDS, none, True) == IDS
    assert messages_to_delete(IDS, Invocation("ok", None, 0.0), True) == []
    assert messages_to_delete(IDS, Invocation("ok", None, 0.0), False) == IDS
    records = [KafkaRecord("t", 0, n, 0, None, b"", []) for n in (4, 5)]
    assert next_positions(records, Invocation({}, None, 0.0), True) == {("t", 0): 6}
    offset_as_text = {
        "batchItemFailures": [{"itemIdentifier": {"topic-partition": "t-0", "offset": "5"}}]
    }
    assert next_positions(records, Invocation(offset_as_text, None, 0.0), True) == {("t", 0): 4}
    flag = {"batchItemFailures": [{"itemIdentifier": {"topic-partition": "t-0", "offset": True}}]}
    assert next_positions(records, Invocation(flag, None, 0.0), True) == {("t", 0): 4}


def _sqs() -> dict[str, Any]:
    return sqs_event(*(sqs_record("{}", message_id=m) for m in IDS))


@pytest.mark.parametrize("response", SUCCESSES)
def test_event_after_a_success_is_none_on_every_source(response: Any) -> None:
    kafka = kafka_event([kafka_record(0, n, {"n": n}) for n in range(3)])
    kinesis = kinesis_event([kinesis_record(n, {"n": n}) for n in range(3)])
    for event in (_sqs(), kafka, kinesis):
        assert event_after(event, response) is None
    assert failed_ids(response) == [] and failed_offsets(response) == []
    assert failed_sequence_numbers(response, kinesis) == []


def test_an_exception_or_a_malformed_response_brings_the_whole_event_back() -> None:
    for answer in (RuntimeError("down"), {"batchItemFailures": [{"itemIdentifier": "m-9"}]}):
        again = event_after(_sqs(), answer)
        assert again is not None
        assert [r["messageId"] for r in again["Records"]] == IDS
        assert {r["attributes"]["ApproximateReceiveCount"] for r in again["Records"]} == {"2"}
        assert failed_ids(answer, _sqs()) == IDS
    kafka = kafka_event([kafka_record(p, n, {"n": n}) for p in (0, 1) for n in (7, 8)])
    assert event_after(kafka, "not an object") == kafka
    kinesis = kinesis_event([kinesis_record(n, {"n": n}) for n in range(3)])
    assert event_after(kinesis, {"batchItemFailures": [{"itemIdentifier": "1"}]}) == kinesis
    with pytest.raises(ValueError, match="the whole batch"):
        failed_ids({"batchItemFailures": [{"itemIdentifier": ""}]})


def test_without_the_setting_the_response_is_not_read() -> None:
    reported = {"batchItemFailures": [{"itemIdentifier": "m-2"}]}
    assert event_after(_sqs(), reported, report_batch_item_failures=False) is None
    assert failed_ids(reported, _sqs(), report_batch_item_failures=False) == []
    again = event_after(_sqs(), KeyError("x"), report_batch_item_failures=False)
    assert again is not None and len(again["Records"]) == 3


def test_deliver_until_acknowledged_redelivers_a_batch_whose_handler_raised() -> None:
    """AWS's basic style: raise on failure, return nothing."""
    calls: list[int] = []

    def raises_once(event: dict[str, Any], context: Any) -> None:
        calls.append(len(event["Records"]))
        if len(calls) == 1:
            raise RuntimeError("a downstream outage")

    assert deliver_until_acknowledged(raises_once, _sqs()) == 2
    assert calls == [3, 3]

    def always(event: dict[str, Any], context: Any) -> None:
        raise RuntimeError("never")

    with pytest.raises(AssertionError, match="still failing after 3") as raised:
        deliver_until_acknowledged(always, _sqs(), max_deliveries=3)
    assert isinstance(raised.value.__cause__, RuntimeError)
