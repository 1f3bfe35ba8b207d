"""Driving a handler as an event source does: redeliver what it reports until it reports
nothing, and run invocations concurrently (as concurrent Lambda execution environments)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .events import event_after

T = TypeVar("T")
#: A Lambda handler: `handler(event, context)`.
Handler = Callable[[dict[str, Any], Any], Mapping[str, Any]]


def deliver_until_acknowledged(
    handler: Handler, event: Mapping[str, Any], *, max_deliveries: int = 30
) -> int:
    """Invoke `handler` with `event`, then with what the event source would redeliver after each
    response (`events.event_after`), until a response reports nothing. Returns the number
    of deliveries; AssertionError when records still fail after `max_deliveries`."""
    pending: Mapping[str, Any] | None = event
    deliveries = 0
    while pending is not None:
        deliveries += 1
        if deliveries > max_deliveries:
            raise AssertionError(f"still failing after {max_deliveries} deliveries")
        pending = event_after(pending, handler(dict(pending), None))
    return deliveries


def run_concurrently(calls: Sequence[Callable[[], T]], *, timeout: float = 120) -> list[T]:
    """Run each call in a thread of its own, all released at once (as concurrent Lambda
    invocations), and return their results in order. An exception in a thread is raised here;
    so is a thread still running after `timeout` seconds."""
    start = threading.Barrier(len(calls))
    results: dict[int, T] = {}
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            start.wait(timeout=30)
            results[index] = calls[index]()
        except BaseException as error:  # raised again by the calling thread
            errors.append(error)

    threads = [
        threading.Thread(target=run, args=(index,), name=f"invocation-{index}")
        for index in range(len(calls))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    if errors:
        raise errors[0]
    if any(thread.is_alive() for thread in threads):
        raise TimeoutError(f"invocations still running after {timeout} s")
    return [results[index] for index in range(len(calls))]
