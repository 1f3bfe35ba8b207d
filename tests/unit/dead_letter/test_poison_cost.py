"""Poison costs what good traffic costs (lambda_inbox._dead_letter): the poison of a batch goes to
the DLQ ten `SendMessageBatch` entries a call (within 256 KiB), an entry a call refuses alone,
and the FAILED records are written together, each expiring after the failed-record retention
(moto)."""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from devkit.app_state import AppState
from devkit.events import ORDER_FIFO_QUEUE_ARN, sqs_event, sqs_record
from devkit.memory_aws import MemoryAws
from devkit.meters import RequestMeter
from lambda_inbox import InboxConsumer, Outcome, UnitOfWork
from lambda_inbox.wire import parse_sqs_event
from lambda_inbox_tools.testing.limits import enforce_sqs_limits

DAY = 86_400


def put_item(body: dict[str, Any], uow: UnitOfWork) -> None:
    uow.put("domain", {"pk": f"ITEM#{body['id']}", "sk": "V"})


def consumer(aws: AppState, **config: Any) -> InboxConsumer[Any]:
    enforce_sqs_limits(aws.sqs)
    return aws.consumer("poison", config=config, model=dict, decide=put_item, key="id")


def poison(n: int, size: int = 0) -> dict[str, Any]:
    return sqs_record(json.dumps({"note": "no id", "n": n, "pad": "x" * size}))


def test_a_hundred_poison_messages_in_ten_batches_cost_ten_sends_and_ten_writes() -> None:
    memory = MemoryAws()  # moto takes seconds for the hundred records
    aws = AppState.created(memory.client("dynamodb"), memory.client("sqs"))
    inbox = consumer(aws)
    calls: Counter[tuple[str, str]] = Counter()

    def count(model: Any, **_: Any) -> None:  # the memory answers before botocore's other hooks
        calls[(model.service_model.service_name, model.name)] += 1

    for client in (aws.sqs, aws.dynamodb):
        client.meta.events.register("before-parameter-build", count)
    before = time.time()
    for batch in range(10):
        event = sqs_event(*(poison(10 * batch + n) for n in range(10)))
        assert inbox.handle(event) == {"batchItemFailures": []}
    # Each batch of poison reads its keys first (a poison message that completed before is a
    # duplicate), then writes its FAILED records in one transaction.
    assert calls == {
        ("sqs", "SendMessageBatch"): 10,
        ("dynamodb", "BatchGetItem"): 10,
        ("dynamodb", "TransactWriteItems"): 10,
    }
    assert len(memory.drain(aws.dlq_url)) == 100
    records = [item for item in aws.scan(aws.inbox) if item["status"]["S"] == "FAILED"]
    assert len(records) == 100
    for record in records:  # each expires after the failed-record retention (14 days)
        expires = int(record["expires_at"]["N"])
        assert before + 14 * DAY - 1 <= expires <= time.time() + 14 * DAY


def test_the_failed_retention_is_the_consumers_setting(aws: AppState) -> None:
    inbox = consumer(aws, failed=timedelta(days=3))
    inbox.handle(sqs_event(poison(1)))
    (record,) = aws.scan(aws.inbox)
    assert int(record["expires_at"]["N"]) <= time.time() + 3 * DAY


def test_poison_among_good_messages_is_one_send_and_the_good_ones_commit(aws: AppState) -> None:
    inbox = consumer(aws)
    meter = RequestMeter(aws.sqs)
    records = [poison(n) if n % 2 else sqs_record(json.dumps({"id": f"g{n}"})) for n in range(10)]
    results = inbox.process(parse_sqs_event(sqs_event(*records)))
    assert [r.outcome for r in results] == [Outcome.COMMITTED, Outcome.DEAD_LETTERED] * 5
    assert meter.counts("sqs") == {"SendMessageBatch": 1}


def test_sends_are_cut_at_sqs_256_kib_a_call(aws: AppState) -> None:
    inbox = consumer(aws)
    meter = RequestMeter(aws.sqs)
    event = sqs_event(*(poison(n, size=100_000) for n in range(6)))  # ~600 KB of poison
    assert inbox.handle(event) == {"batchItemFailures": []}
    calls = meter.bodies("SendMessageBatch")
    assert len(calls) == 3  # two 100 KB dead letters a call
    for call in calls:
        size = sum(
            len(entry["MessageBody"].encode())
            + sum(
                len(name) + len(value["DataType"]) + len(value.get("StringValue", ""))
                for name, value in entry["MessageAttributes"].items()
            )
            for entry in call["Entries"]
        )
        assert size <= 256 * 1024
    assert len(aws.dead_letters()) == 6


def test_an_entry_the_batch_refuses_is_sent_again_alone(aws: AppState) -> None:
    inbox = consumer(aws)
    meter = RequestMeter(aws.sqs)

    def refuse_the_second(parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Successful") and len(parsed["Successful"]) > 1:
            refused = parsed["Successful"].pop(1)
            parsed.setdefault("Failed", []).append(
                {"Id": refused["Id"], "SenderFault": False, "Code": "InternalError"}
            )

    aws.sqs.meta.events.register("after-call.sqs.SendMessageBatch", refuse_the_second)
    results = inbox.process(parse_sqs_event(sqs_event(*(poison(n) for n in range(4)))))
    assert {r.outcome for r in results} == {Outcome.DEAD_LETTERED}
    assert meter.operations("sqs") == ["SendMessageBatch", "SendMessage"]
    # The refused entry went in the batch too (the hook only hid it): it is there twice, a
    # duplicate in the DLQ, never a loss (docs/bad-input.md).
    assert len(aws.dead_letters()) == 5


def test_a_throttled_send_reports_its_poison_for_redelivery_and_loses_nothing(
    aws: AppState,
) -> None:
    inbox = consumer(aws)

    def throttle(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "ThrottlingException"}}, "SendMessageBatch")

    aws.sqs.meta.events.register("before-call.sqs.SendMessageBatch", throttle)
    records = [poison(n) for n in range(3)]
    results = inbox.process(parse_sqs_event(sqs_event(*records)))
    assert {(r.outcome, r.error_code) for r in results} == {(Outcome.FAILED, "dead_letter_failed")}
    assert aws.scan(aws.inbox) == []  # no FAILED record for what was not dead-lettered
    aws.sqs.meta.events.unregister("before-call.sqs.SendMessageBatch", throttle)
    again = inbox.process(parse_sqs_event(sqs_event(*records)))
    assert {r.outcome for r in again} == {Outcome.DEAD_LETTERED}


@pytest.mark.parametrize("failing", [0, 1])
def test_in_a_fifo_queue_poison_behind_an_unsent_dead_letter_is_held_back(
    aws: AppState, failing: int
) -> None:
    """A dead letter that cannot be sent fails its record; what follows it in the queue is
    reported too (skipped), never dead-lettered ahead of it."""
    inbox = consumer(aws, dead_letter_queue_url=aws.fifo_dlq_url)
    calls: list[int] = []

    def fail_one_call(**_: Any) -> None:
        calls.append(1)
        if len(calls) - 1 == failing:
            raise ClientError({"Error": {"Code": "ServiceUnavailable"}}, "SendMessageBatch")

    aws.sqs.meta.events.register("before-call.sqs.SendMessageBatch", fail_one_call)
    records = [
        sqs_record(json.dumps({"n": n}), arn=ORDER_FIFO_QUEUE_ARN, group="g", dedup=f"d{n}")
        for n in range(15)
    ]
    results = inbox.process(parse_sqs_event(sqs_event(*records)))
    sent = 10 * failing  # the batch calls before the failing one
    assert [r.outcome for r in results[:sent]] == [Outcome.DEAD_LETTERED] * sent
    assert results[sent].error_code == "dead_letter_failed"
    assert [r.outcome for r in results[sent + 1 :]] == [Outcome.SKIPPED] * (14 - sent)
    assert len(calls) == failing + 1  # nothing sent after the call that failed
