"""Bounded network calls run on the consumer's own worker threads: no thread per call, one pool
per consumer, and a call queued past its deadline never starts."""

from __future__ import annotations

import threading
import time
from types import ModuleType

import pytest

from devkit.app_state import AppState
from devkit.events import sqs_event, sqs_record
from devkit.payloads import order
from lambda_inbox import RetryPolicy
from lambda_inbox._errors import DeadlineReached
from lambda_inbox._internal.deadline import BoundedCalls, Deadline
from lambda_inbox_tools.testing.context import FakeLambdaContext


def test_batches_start_no_thread_per_call(
    aws: AppState, order_events: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []
    original = threading.Thread.start

    def counting(thread: threading.Thread) -> None:
        started.append(thread.name)
        original(thread)

    monkeypatch.setattr(threading.Thread, "start", counting)
    context = FakeLambdaContext(30_000)
    for batch in range(6):  # every batch: a read, a transaction; twelve bounded calls at least
        records = [sqs_record(order(f"evt-{batch}-{n}")) for n in range(3)]
        assert order_events.handler(sqs_event(*records), context) == {"batchItemFailures": []}

    workers = order_events.consumer.calls.workers
    assert 0 < len(started) <= workers, started
    assert all(name.startswith("inbox-call") for name in started), started
    assert len(aws.order_records()) == 18


def test_a_call_queued_past_its_deadline_never_starts() -> None:
    calls = BoundedCalls(1, "test-call")
    release = threading.Event()
    ran: list[str] = []
    deadline = Deadline(time.monotonic() + 0.2, calls=calls)
    blocker = deadline.start(release.wait, 5)  # holds the only worker
    queued = deadline.start(ran.append, "late")
    with pytest.raises(DeadlineReached):
        deadline.wait(queued)
    release.set()
    blocker.result(5)
    with pytest.raises(DeadlineReached, match="before this call could start"):
        queued.result(5)
    assert ran == []


def test_a_deadline_from_a_context_uses_the_given_pool() -> None:
    calls = BoundedCalls(2)
    deadline = Deadline.from_context(FakeLambdaContext(10_000), RetryPolicy(), calls=calls)
    assert deadline.calls is calls
    assert deadline.run(lambda: threading.current_thread().name).startswith("inbox-call")
    assert Deadline(None).run(lambda: threading.current_thread().name) == (
        threading.current_thread().name
    )
