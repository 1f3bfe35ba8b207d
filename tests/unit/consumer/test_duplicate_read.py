"""When the inbox keys are read before the commit (lambda_inbox._triage), what the SQS and
Kafka adapters say was delivered before, and the setting. The request counts on the real engine
are tests/integration/order_events/test_request_budget.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import inbound_message, kafka_event, sqs_event, sqs_record
from devkit.meters import RequestMeter
from lambda_inbox import (
    ConfigurationError,
    GroupCommit,
    InboxConfig,
    MessageResult,
    Outcome,
    PoisonMessage,
)
from lambda_inbox._sources import KafkaSource
from lambda_inbox._triage import RECENT_DUPLICATE_THRESHOLD, ReadFirst
from lambda_inbox.wire import parse_sqs_event
from lambda_inbox_tools.testing.events import delivered_again, kafka_record


def results(*outcomes: Outcome) -> list[MessageResult]:
    return [MessageResult(inbound_message(), outcome, "k") for outcome in outcomes]


def test_a_new_batch_is_not_read_first() -> None:
    assert ReadFirst().reason([inbound_message(), inbound_message(delivery_id="m-2")]) is None


def test_a_redelivered_message_reads_first() -> None:
    batch = [inbound_message(), inbound_message(delivery_id="m-2", redelivered=True)]
    assert ReadFirst().reason(batch) == "redelivered"


@pytest.mark.parametrize(
    ("mode", "leased", "expected"),
    [("always", False, "always"), ("never", False, None), ("never", True, "leased")],
)
def test_the_setting_and_leased_mode(mode: Any, leased: bool, expected: str | None) -> None:
    batch = [inbound_message(redelivered=True)]
    assert ReadFirst(mode, leased=leased).reason(batch) == expected


def test_recent_duplicates_read_first_until_they_fade() -> None:
    policy, batch = ReadFirst(), [inbound_message()]
    for _ in range(50):
        policy.observe(results(Outcome.COMMITTED))
    assert policy.reason(batch) is None
    policy.observe(results(Outcome.COMMITTED, Outcome.DUPLICATE))
    assert policy.recent_duplicates > RECENT_DUPLICATE_THRESHOLD
    assert policy.reason(batch) == "recent_duplicates"
    faded = 0
    while policy.reason(batch) is not None:
        policy.observe(results(Outcome.COMMITTED))
        faded += 1
    assert 2 <= faded <= 10  # a few batches, not forever


def test_one_batch_in_twenty_with_a_duplicate_stays_near_the_threshold() -> None:
    policy = ReadFirst()
    for index in range(2000):
        policy.observe(results(Outcome.DUPLICATE if index % 20 == 0 else Outcome.COMMITTED))
    assert policy.recent_duplicates == pytest.approx(RECENT_DUPLICATE_THRESHOLD, abs=0.04)


@pytest.mark.parametrize(
    ("record", "redelivered"),
    [
        (sqs_record("{}"), False),
        (delivered_again(sqs_record("{}")), True),
        (sqs_record("{}", receive_count=7), True),
        (
            sqs_record(
                "{}",
                message_attributes={
                    "inbox-error-code": {"dataType": "String", "stringValue": "handler_error"}
                },
            ),
            True,
        ),
        (
            sqs_record(
                "{}",
                message_attributes={"kafka-topic": {"dataType": "String", "stringValue": "t"}},
            ),
            True,
        ),
        (
            sqs_record(
                "{}", message_attributes={"other": {"dataType": "String", "stringValue": "x"}}
            ),
            False,
        ),
    ],
)
def test_the_sqs_adapter_says_what_was_delivered_before(
    record: dict[str, Any], redelivered: bool
) -> None:
    (message,) = parse_sqs_event(sqs_event(record))
    assert message.redelivered is redelivered


def test_a_record_moved_by_a_redrive_policy_was_delivered_before() -> None:
    record = sqs_record("{}")
    record["attributes"]["DeadLetterQueueSourceArn"] = "arn:aws:sqs:us-east-1:1:source"
    (message,) = parse_sqs_event(sqs_event(record))
    assert message.redelivered


def test_kafka_offsets_seen_in_this_environment_were_delivered_before() -> None:
    source = KafkaSource()
    first = kafka_event([kafka_record(0, offset, {"n": offset}) for offset in range(3)])
    assert [m.redelivered for m in source.messages(first)] == [False] * 3
    later = kafka_event(
        [kafka_record(0, offset, {"n": offset}) for offset in range(2, 5)]
        + [kafka_record(1, 0, {"n": 0})]
    )
    assert [(m.ordering_scope, m.redelivered) for m in source.messages(later)] == [
        ("payments-0", True),  # offset 2, seen (a retried batch or a rewind)
        ("payments-0", False),
        ("payments-0", False),
        ("payments-1", False),
    ]
    assert [m.redelivered for m in KafkaSource().messages(later)] == [False] * 4  # another env


def test_the_setting_is_checked_and_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert InboxConfig("c", "t").commit.duplicate_read == "auto"
    with pytest.raises(ConfigurationError, match="duplicate_read must be one of auto, always"):
        GroupCommit(duplicate_read="sometimes")  # type: ignore[arg-type]
    monkeypatch.setenv("INBOX_TABLE", "t")
    monkeypatch.setenv("INBOX_DUPLICATE_READ", "always")
    assert InboxConfig.from_env("c").commit.duplicate_read == "always"
    monkeypatch.setenv("INBOX_DUPLICATE_READ", "yes")
    with pytest.raises(ConfigurationError, match="INBOX_DUPLICATE_READ must be one of"):
        InboxConfig.from_env("c")


def consumer_of(aws: AppState, seen: list[str], bad: set[str], **config: Any) -> Any:
    """Each message writes one item; ids in `bad` are poison (a model tightened later)."""

    def decide(payload: dict[str, Any], uow: Any) -> None:
        seen.append(payload["id"])
        if payload["id"] in bad:
            raise PoisonMessage("bad on purpose")
        uow.put(aws.domain, {"pk": payload["id"], "sk": "X"})

    return aws.consumer("reads", model=dict, decide=decide, key="id", config=config)


def test_poison_found_while_deciding_has_the_keys_read_before_it_is_dead_lettered(
    aws: AppState,
) -> None:
    seen: list[str] = []
    bad: set[str] = set()
    consumer = consumer_of(aws, seen, bad)
    consumer.handle(sqs_event(sqs_record(json.dumps({"id": "done"}))))
    bad.update({"done", "bad"})
    meter = RequestMeter(consumer.dynamodb)
    batch = sqs_event(
        sqs_record(json.dumps({"id": "new"})),
        sqs_record(json.dumps({"id": "done"})),  # completed before: a duplicate, not poison
        sqs_record(json.dumps({"id": "bad"})),
    )
    processed = consumer.process(parse_sqs_event(batch))
    assert [(r.message_key, r.outcome) for r in processed] == [
        ("new", Outcome.COMMITTED),
        ("done", Outcome.DUPLICATE),
        ("bad", Outcome.DEAD_LETTERED),
    ]
    # The read, the FAILED record (dead-lettered before anything commits), the commit.
    assert meter.operations() == ["BatchGetItem", "PutItem", "TransactWriteItems"]
    assert seen == ["done", "new", "done", "bad"]  # each handled once in this batch
    assert len(aws.dead_letters()) == 1


def test_a_missing_table_dead_letters_nothing_when_poison_is_found_while_deciding(
    aws: AppState,
) -> None:
    consumer = consumer_of(aws, [], {"bad"}, inbox_table="missing")
    batch = sqs_event(sqs_record(json.dumps({"id": "ok"})), sqs_record(json.dumps({"id": "bad"})))
    processed = consumer.process(parse_sqs_event(batch))
    assert {(r.outcome, r.error_code) for r in processed} == {(Outcome.FAILED, "inbox_unavailable")}
    assert aws.dead_letters() == []


def test_never_leaves_redelivered_duplicates_to_the_commit(aws: AppState) -> None:
    consumer = consumer_of(aws, [], set(), duplicate_read="never")
    record = sqs_record(json.dumps({"id": "a"}))
    consumer.handle(sqs_event(record))
    meter = RequestMeter(consumer.dynamodb)
    (again,) = consumer.process(parse_sqs_event(sqs_event(delivered_again(record))))
    assert again.outcome is Outcome.DUPLICATE
    assert meter.operations() == ["TransactWriteItems"]
