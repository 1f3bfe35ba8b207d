"""A Kinesis record aggregating any number of user records finishes across invocations
(lambda_inbox._sources.kinesis, its process_in_chunks, store.progress), in memory
(devkit.memory_aws): each invocation answers before its deadline having committed at least one
more chunk, Lambda's retry from the aggregate's own sequence number starts where the last one
stopped (also in another execution environment), and every user record is applied once.

The deadline runs on a clock the test controls, moved by every DynamoDB and SQS request (the
time a request takes is what bounds an invocation here; the library's own work is counted in
benchmarks/hostile_cost.py). Marked `soak`: the 150,000 user records of a 1 MB aggregate on the
wall clock, each invocation's memory traced.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.hostile import kpl_bomb, kpl_fan_out
from devkit.memory_aws import MemoryAws
from devkit.resident import peak_above, peak_reset
from lambda_inbox import InboxConsumer, RetryPolicy, UnitOfWork
from lambda_inbox._internal.deadline import SystemClock, stop_past_deadline
from lambda_inbox._sources import kinesis
from lambda_inbox_tools.testing import event_after, kinesis_event
from lambda_inbox_tools.testing.context import FakeLambdaContext

ACCOUNTS = 10
#: Messages of a chunk here; what one request costs on the controlled clock; an invocation's
#: time: a chunk's two transactions and its progress take half of what it can use, a retry's
#: read of a chunk a sixth.
CHUNK = 100
REQUEST_SECONDS = 0.04
BUDGET_MS = 300


def credit(user: dict[str, Any], uow: UnitOfWork) -> None:
    uow.update(
        "domain",
        {"pk": f"ACCOUNT#{user['account']}", "sk": "TOTAL"},
        "ADD total :amount",
        values={":amount": user["amount"]},
    )


@dataclass
class Shard:
    """The consumer (one execution environment) and what its invocations read."""

    aws: AppState
    consumer: InboxConsumer[Any]
    #: The user records (their index) each invocation read, one list per invocation.
    read: list[list[int]] = field(default_factory=list)


class ControlledClock:
    now = 1_000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def spend(self, **_: Any) -> None:
        self.now += REQUEST_SECONDS


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[ControlledClock]:
    monkeypatch.setattr(kinesis, "CHUNK_MESSAGES", CHUNK)
    controlled = ControlledClock()
    monkeypatch.setattr(SystemClock, "monotonic", staticmethod(controlled.monotonic))
    monkeypatch.setattr(SystemClock, "sleep", staticmethod(controlled.sleep))
    yield controlled


def in_memory(clock: ControlledClock) -> AppState:
    """Tables and queues in memory whose every request moves `clock` on. The memory answers
    before botocore's `before-send`, where the library's `stop_past_deadline` refuses the
    further requests of a call its deadline has passed (the batch read's next `BatchGetItem`):
    it is registered before the memory's answer here."""
    memory = MemoryAws()
    aws = AppState.created(memory.client("dynamodb"), memory.client("sqs"))
    for client, service in ((aws.dynamodb, "dynamodb"), (aws.sqs, "sqs")):
        client.meta.events.register(f"before-parameter-build.{service}", stop_past_deadline)
        client.meta.events.register(f"before-parameter-build.{service}", clock.spend)
    return aws


def environment(aws: AppState) -> Shard:
    """A fresh execution environment of the consumer: nothing seen, nothing remembered."""
    consumer = aws.consumer(
        "fan-out",
        config={"retry": RetryPolicy(max_attempts=3)},
        model=dict,
        decide=credit,
        key="id",
    )
    shard = Shard(aws, consumer)

    def note_read(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "BatchGetItem":  # sent: after the deadline's and the clock's hooks
            for request in params.get("RequestItems", {}).values():
                keys = (key["pk"]["S"].rpartition("#u-")[2] for key in request["Keys"])
                shard.read[-1].extend(int(index) for index in keys)

    consumer.dynamodb.meta.events.register("before-parameter-build.dynamodb", note_read)
    return shard


def totals(aws: AppState) -> dict[str, int]:
    found: dict[str, int] = {}
    for account in range(ACCOUNTS):
        item = aws.item(f"ACCOUNT#acct-{account}", "TOTAL")
        found[f"acct-{account}"] = int(item["total"]["N"]) if item else 0
    return found


def progress(aws: AppState) -> int:
    """The index of the first user record not settled, as the inbox table keeps it (0: none)."""
    for item in aws.scan(aws.inbox):
        if item["pk"]["S"].startswith("#aggregate#fan-out#"):
            return int(item["next_index"]["N"])
    return 0


def completed(aws: AppState) -> int:
    return sum(1 for item in aws.scan(aws.inbox) if item.get("status", {}).get("S") == "COMPLETED")


def deliver_until_done(
    shards: list[Shard],
    users: int,
    budget_ms: int,
    clock: ControlledClock,
    *,
    invocations: int,
) -> list[int]:
    """Lambda's retries of the one-record batch, from the sequence number each response names,
    round robin over `shards` (execution environments), each invocation given `budget_ms`;
    the milliseconds each had left when it answered. No invocation reads a user record before
    the progress kept for the aggregate when it started."""
    event: dict[str, Any] | None = kinesis_event([kpl_fan_out(users, accounts=ACCOUNTS)])
    left = []
    for attempt in range(invocations):
        if event is None:
            break
        shard = shards[attempt % len(shards)]
        done_before, kept = completed(shard.aws), progress(shard.aws)
        shard.read.append([])
        context = FakeLambdaContext(budget_ms, clock=clock.monotonic)
        response = shard.consumer.handle(event, context)
        left.append(context.get_remaining_time_in_millis())
        assert completed(shard.aws) > done_before  # every invocation gets further
        assert min(shard.read[-1], default=users) >= kept  # from where the last one stopped
        event = event_after(event, response)
    assert event is None, f"not done after {invocations} invocations"
    return left


@pytest.mark.parametrize("environments", [1, 2], ids=["one-environment", "alternating"])
def test_an_aggregate_of_many_chunks_finishes_within_each_deadline_and_applies_each_once(
    clock: ControlledClock, environments: int
) -> None:
    users = 5 * CHUNK
    aws = in_memory(clock)
    shards = [environment(aws) for _ in range(environments)]

    left = deliver_until_done(shards, users, BUDGET_MS, clock, invocations=12)

    assert len(left) > 2  # it took several invocations
    assert min(left) > 0  # each answered before its deadline
    assert totals(aws) == {f"acct-{n}": users // ACCOUNTS for n in range(ACCOUNTS)}
    assert completed(aws) == users


def test_without_the_kept_progress_retries_read_the_settled_records_again_until_they_stall(
    clock: ControlledClock,
) -> None:
    """What the progress item is for: with its writes refused, each retry reads the settled user
    records again (finding them duplicates: nothing is applied twice), until reading them takes
    the whole invocation and no retry gets further."""
    users = 10 * CHUNK
    aws = in_memory(clock)
    shard = environment(aws)

    def refuse_progress(params: dict[str, Any], **_: Any) -> None:
        if params.get("Item", {}).get("pk", {}).get("S", "").startswith("#aggregate#"):
            raise RuntimeError("progress refused")

    shard.consumer.dynamodb.meta.events.register(
        "before-parameter-build.dynamodb.PutItem", refuse_progress
    )
    event = kinesis_event([kpl_fan_out(users, accounts=ACCOUNTS)])
    done = []
    for _ in range(6):
        shard.read.append([])
        response = shard.consumer.handle(event, FakeLambdaContext(BUDGET_MS, clock=clock.monotonic))
        assert response["batchItemFailures"]
        assert min(shard.read[-1], default=0) == 0  # from the aggregate's first record
        done.append(completed(aws))
    assert done[-1] == done[-2] < users  # stalled
    per_account = Counter(f"acct-{n % ACCOUNTS}" for n in range(done[-1]))
    assert totals(aws) == {f"acct-{n}": per_account[f"acct-{n}"] for n in range(ACCOUNTS)}


@pytest.mark.soak
@pytest.mark.timeout(900)
def test_a_one_megabyte_aggregate_of_150_000_user_records_finishes_on_the_wall_clock() -> None:
    """The issue's record: 150,000 user records of two bytes in 1.2 MB, each invocation 3 s."""
    users = 150_000
    memory = MemoryAws()
    aws = AppState.created(memory.client("dynamodb"), memory.client("sqs"))

    def count(_: dict[str, Any], uow: UnitOfWork) -> None:
        uow.update("domain", {"pk": "COUNTER", "sk": "USERS"}, "ADD total :one", values={":one": 1})

    consumer = aws.consumer("fan-out", model=dict, decide=count)
    event: dict[str, Any] | None = kinesis_event([kpl_bomb(users)])
    peaks: list[float] = []
    for _ in range(300):
        if event is None:
            break
        context = FakeLambdaContext(3_000)
        resident = peak_reset()
        response = consumer.handle(event, context)
        peaks.append(peak_above(resident))
        assert context.get_remaining_time_in_millis() > 0
        event = event_after(event, response)
    assert event is None
    assert aws.item("COUNTER", "USERS") == {
        "pk": {"S": "COUNTER"},
        "sk": {"S": "USERS"},
        "total": {"N": str(users)},
    }
    done = Counter(item.get("status", {}).get("S") for item in aws.scan(aws.inbox))
    assert done["COMPLETED"] == users
    # The parsed aggregate, one chunk's messages and what the tables in memory store meanwhile,
    # never 150,000 messages (some 200 MB).
    assert max(peaks) < 64
