"""The deadline and the batch ledger, on a fake clock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lambda_inbox import Outcome, RetryPolicy
from lambda_inbox._internal.deadline import Deadline
from lambda_inbox._report import settled, skipped
from tests.unit.consumer.fakes import FakeClock, delivery, msg, report_for


class Context:
    def __init__(self, millis: int) -> None:
        self.millis = millis

    def get_remaining_time_in_millis(self) -> int:
        return self.millis


@pytest.mark.parametrize(
    ("budget_ms", "margin"),
    [(3_000, 0.6), (10_000, 2.0), (30_000, 3.0), (900_000, 3.0), (500, 0.1)],
)
def test_the_margin_scales_with_the_budget_up_to_the_policy_margin(
    budget_ms: int, margin: float
) -> None:
    clock = FakeClock()
    deadline = Deadline.from_context(Context(budget_ms), RetryPolicy(), clock)
    assert deadline.left() == pytest.approx(budget_ms / 1000 - margin)


def test_the_smallest_function_timeout_leaves_most_of_its_budget_to_work() -> None:
    deadline = Deadline.from_context(Context(3_000), RetryPolicy(), FakeClock())
    left = deadline.left()
    assert left is not None and left >= 2.0


def test_a_deadline_expires_and_refuses_sleeps_it_has_no_room_for() -> None:
    clock = FakeClock()
    policy = RetryPolicy(deadline_margin=timedelta(0))
    deadline = Deadline.from_context(Context(1_000), policy, clock)
    assert deadline.sleep(0.5)
    assert clock.slept == [0.5]
    assert not deadline.sleep(0.6)
    assert clock.slept == [0.5]
    clock.advance(0.5)
    assert deadline.expired()


def test_without_a_context_there_is_no_deadline() -> None:
    deadline = Deadline.from_context(object(), RetryPolicy(), FakeClock())
    assert deadline.left() is None
    assert not deadline.expired()
    assert deadline.allows(10**9)


def test_the_report_keeps_input_order_and_blocks_later_records_of_a_failed_scope() -> None:
    first, second, third = (delivery(f"m{i}", i, scope="p0") for i in range(3))
    other = delivery("x", 3, scope="p1")
    report = report_for([d.message for d in (third, first, other, second)])
    report.record(settled(second, Outcome.FAILED, "deadline"))
    assert not report.blocked(first)  # earlier than the failure
    assert report.blocked(third)
    assert not report.blocked(other)
    report.record(settled(first, Outcome.COMMITTED))
    report.record(skipped(third))
    report.record(settled(other, Outcome.DUPLICATE))
    assert [(r.message.delivery_id, r.outcome) for r in report.results()] == [
        ("m0", Outcome.COMMITTED),
        ("m1", Outcome.FAILED),
        ("m2", Outcome.SKIPPED),
        ("x", Outcome.DUPLICATE),
    ]


def test_an_unordered_message_is_never_blocked() -> None:
    failed, later = delivery("a", 0), delivery("b", 1)
    report = report_for([msg("a", 0), msg("b", 1)])
    report.record(settled(failed, Outcome.FAILED))
    assert not report.blocked(later)
