"""Work that cannot finish before the Lambda deadline is reported, not lost and not timed out.

A poison storm (every ten records dead-lettered in one SendMessageBatch) or a long chain of
transactions on a hot item must stop at the deadline, answer with a partial batch response, and
keep what it did: redelivering the reported records finishes the job, each effect once.
Slowness is injected below the code under test, by a botocore hook on each send. Each test runs
on a clock it controls (the hook moves the deadline's clock and the context's on by the delay,
without waiting: `make check` and `make test`) and, marked `soak` (`make soak`), on the wall
clock, where the hook sleeps and a send can be abandoned under way.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from devkit.app_state import AppState
from devkit.events import ORDER_FIFO_QUEUE_ARN, sqs_event, sqs_record
from lambda_inbox import InboxConsumer, Outcome, RetryPolicy, UnitOfWork
from lambda_inbox._internal.deadline import SystemClock
from lambda_inbox.wire import MESSAGE_KEY_ATTRIBUTE, parse_sqs_event
from lambda_inbox_tools.testing.context import FakeLambdaContext
from lambda_inbox_tools.testing.faults import slow_sends

SEND_DELAY = 0.1
#: On the wall clock, budgets of 16 and 20 sends, and chains of sends twice as long: some sends
#: finish before the deadline even while the machine is loaded (the suite runs on three workers),
#: never all of them.
#: A storm's send carries ten dead letters.
STORM_BUDGET_MS, STORM_LENGTH = 1_600, 320
CHAIN_BUDGET_MS, CHAIN_LENGTH = 2_000, 40
DEAD_LETTERS_PER_SEND = 10


class ControlledClock:
    """Monotonic seconds that move only when a send is slowed (or the code under test sleeps)."""

    #: No load moves this clock: a budget of 5 sends and a storm of 10 stop half way as surely
    #: as the wall clock's 16 of 32 (each record a message sent to moto).
    storm_budget_ms, storm_length = 500, 100

    def __init__(self) -> None:
        self.now = 1_000.0
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    def context(self, remaining_millis: int) -> FakeLambdaContext:
        return FakeLambdaContext(remaining_millis, clock=self.monotonic)

    def slow_sends(self, client: Any, operation: str, seconds: float) -> None:
        client.meta.events.register(f"before-send.{operation}", lambda **_: self.sleep(seconds))


class WallClock:
    """The wall clock: slowed sends wait (`lambda_inbox_tools.testing.faults.slow_sends`)."""

    storm_budget_ms, storm_length = STORM_BUDGET_MS, STORM_LENGTH

    def context(self, remaining_millis: int) -> FakeLambdaContext:
        return FakeLambdaContext(remaining_millis)

    def slow_sends(self, client: Any, operation: str, seconds: float) -> None:
        slow_sends(client, operation, seconds)


@pytest.fixture(params=["controlled", pytest.param("wall", marks=pytest.mark.soak)])
def clock(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The clock of the deadline, the Lambda context and the slowed sends."""
    if request.param == "wall":
        yield WallClock()
        return
    controlled = ControlledClock()
    # Deadline.from_context's default clock is the SystemClock instance: its methods are the
    # class's attributes.
    monkeypatch.setattr(SystemClock, "monotonic", staticmethod(controlled.monotonic))
    monkeypatch.setattr(SystemClock, "sleep", staticmethod(controlled.sleep))
    yield controlled


class Credit(BaseModel):
    event_id: str
    account: str
    amount: int


def credit(payment: Credit, uow: UnitOfWork) -> None:
    uow.update(
        "domain",
        {"pk": f"ACCOUNT#{payment.account}", "sk": "BALANCE"},
        "ADD balance :amount",
        values={":amount": payment.amount},
        commutes=False,  # one transaction per credit: the chain this test needs
    )


def consumer(aws: AppState) -> InboxConsumer[Credit]:
    return aws.consumer(
        "credits",
        config={"retry": RetryPolicy(deadline_margin=timedelta(0))},
        model=Credit,
        decide=credit,
        key="event_id",
    )


@pytest.mark.parametrize("arn", [None, ORDER_FIFO_QUEUE_ARN], ids=["standard", "fifo"])
def test_a_poison_storm_stops_at_the_deadline_and_keeps_what_it_dead_lettered(
    aws: AppState, arn: str | None, clock: Any
) -> None:
    inbox = consumer(aws)
    clock.slow_sends(aws.sqs, "sqs.SendMessageBatch", SEND_DELAY)
    extra: dict[str, Any] = {"arn": arn, "group": "g"} if arn else {}
    records = [
        sqs_record("{not json", dedup=f"d-{n}" if arn else None, **extra)
        for n in range(clock.storm_length)
    ]

    first = inbox.process(
        parse_sqs_event(sqs_event(*records)), clock.context(clock.storm_budget_ms)
    )

    outcomes = [result.outcome for result in first]
    sent = outcomes.count(Outcome.DEAD_LETTERED)
    assert 1 <= sent < len(records)
    assert outcomes[:sent] == [Outcome.DEAD_LETTERED] * sent  # in order, then nothing more
    assert first[sent].outcome is Outcome.FAILED and first[sent].error_code == "deadline"
    if arn:  # FIFO: everything after the first failure is held back, in order
        assert outcomes[sent + 1 :] == [Outcome.SKIPPED] * (len(records) - sent - 1)
    else:
        assert {result.error_code for result in first[sent:]} == {"deadline"}
    # What was reported dead-lettered is in the DLQ, and nothing reported after the send under
    # way at the deadline: that one was abandoned, not stopped, and may still land
    # (docs/bad-input.md: a dead letter sent twice is a duplicate in the DLQ).
    assert sent % DEAD_LETTERS_PER_SEND == 0
    keys = [str(result.message_key) for result in first]
    landed = dead_letter_keys(aws)
    assert set(keys[:sent]) <= set(landed) <= set(keys[: sent + DEAD_LETTERS_PER_SEND])
    assert len(landed) == len(set(landed))
    abandoned = [key for key in landed if key not in keys[:sent]]  # none or the send under way

    retried = [records[n] for n, outcome in enumerate(outcomes) if outcome.needs_redelivery]
    second = inbox.process(parse_sqs_event(sqs_event(*retried)), clock.context(60_000))
    assert {result.outcome for result in second} == {Outcome.DEAD_LETTERED}
    # Every poison in the DLQ in all; only the abandoned send's can be there twice.
    assert sorted(landed + dead_letter_keys(aws)) == sorted(keys + abandoned)


def dead_letter_keys(aws: AppState) -> list[str]:
    """The message keys in the DLQ (drained), once a send abandoned at the deadline has ended.
    The hook that refuses sends past the deadline runs after the injected delay, so the send can
    land only when it was already in moto as the wait gave up (seen on a loaded machine); it is
    given several times `SEND_DELAY` to do so."""
    time.sleep(5 * SEND_DELAY)
    return [
        message["MessageAttributes"][MESSAGE_KEY_ATTRIBUTE]["StringValue"]
        for message in aws.dead_letters()
    ]


def test_a_hot_item_chain_stops_at_the_deadline_and_redelivery_finishes_it_once(
    aws: AppState, clock: Any
) -> None:
    inbox = consumer(aws)
    clock.slow_sends(aws.dynamodb, "dynamodb.TransactWriteItems", SEND_DELAY)
    bodies = [
        json.dumps({"event_id": f"c-{n}", "account": "hot", "amount": n + 1})
        for n in range(CHAIN_LENGTH)
    ]
    records = [sqs_record(body) for body in bodies]

    first = inbox.process(parse_sqs_event(sqs_event(*records)), clock.context(CHAIN_BUDGET_MS))

    committed = [r for r in first if r.outcome is Outcome.COMMITTED]
    failed = [r for r in first if r.outcome is Outcome.FAILED]
    assert committed and failed and len(committed) + len(failed) == len(records)
    assert {r.error_code for r in failed} == {"deadline"}

    retried = [records[r.message.sequence] for r in failed]
    second = inbox.process(parse_sqs_event(sqs_event(*retried)), clock.context(60_000))
    # A transaction the deadline stopped waiting for may still have committed (its outcome was
    # unknown): its redelivery is then a duplicate. Either way, each amount is applied once.
    assert {r.outcome for r in second} <= {Outcome.COMMITTED, Outcome.DUPLICATE}
    item = aws.dynamodb.get_item(
        TableName=aws.domain, Key={"pk": {"S": "ACCOUNT#hot"}, "sk": {"S": "BALANCE"}}
    )["Item"]
    assert int(item["balance"]["N"]) == sum(range(1, CHAIN_LENGTH + 1))
