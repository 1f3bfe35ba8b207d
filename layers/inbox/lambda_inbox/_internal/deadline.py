"""The invocation's deadline: Lambda's time left minus a safety margin, on an injectable clock.

The margin scales with the budget (a fraction of the time left at the start, capped by the
retry policy's margin), so a function with the smallest timeout (3 s) still works for most of
its budget while a long one keeps a few seconds for answering.

Network calls are bounded by the time left, not only by the clients' fixed timeouts (a socket
read timeout restarts with every byte, and retries multiply it): `Deadline.run` (or `start` and
`wait`, for calls that run side by side) hands the call to `BoundedCalls`, a small pool of worker
threads made once per consumer (never a thread per call), and stops waiting when the deadline
comes, raising `DeadlineReached`. The caller reports what the call was for as a batch item
failure. The abandoned call ends on its own (the clients' timeouts and attempts are small, see
`aws_clients.CLIENT_CONFIG`); a queued call whose deadline passed before a worker took it never
starts; and `stop_past_deadline`, a botocore `before-send` hook, refuses every further attempt
once its deadline has passed. A call that still lands after the invocation answered is harmless:
commits are conditional on the inbox record, reads change nothing, and a dead letter sent twice
is a duplicate in the DLQ, never a loss.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar

from lambda_inbox._errors import DeadlineReached
from lambda_inbox._internal import RetryPolicy

T = TypeVar("T")


if TYPE_CHECKING:  # protocols type the code only: nothing checks them at run time
    from typing import Protocol

    class Clock(Protocol):
        def monotonic(self) -> float: ...

        def sleep(self, seconds: float) -> None: ...


class SystemClock:
    # The functions themselves, not methods calling them: the deadline is asked for every message.
    monotonic = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)


SYSTEM_CLOCK = SystemClock()


class BoundedCalls:
    """The worker threads that make one consumer's network calls: created on first use, kept for
    the life of the execution environment. `workers` bounds how many calls run at once (the
    committer's parallel transactions); an abandoned call holds its worker until it ends."""

    def __init__(self, workers: int = 4, name: str = "inbox-call") -> None:
        self.workers = workers
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def submit(self, task: Callable[[], T]) -> Future[T]:
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix=self._name)
        return self._pool.submit(task)


#: For deadlines made without a consumer's own pool (the relay, scripts).
SHARED_CALLS = BoundedCalls(4, "inbox-shared-call")


class Deadline:
    """When this invocation stops starting work (`ends_at`; `None` means no deadline: tests,
    scripts), on `clock`; `grace`, the seconds past `ends_at` a call already under way may
    still take (half the margin: the other half is for answering Lambda); `calls`, the threads
    that make the bounded calls."""

    __slots__ = ("calls", "clock", "ends_at", "grace")

    def __init__(
        self,
        ends_at: float | None,
        clock: Clock = SYSTEM_CLOCK,
        grace: float = 0.0,
        calls: BoundedCalls = SHARED_CALLS,
    ) -> None:
        self.ends_at = ends_at
        self.clock = clock
        self.grace = grace
        self.calls = calls

    @classmethod
    def from_context(
        cls,
        context: Any,
        policy: RetryPolicy,
        clock: Clock = SYSTEM_CLOCK,
        calls: BoundedCalls = SHARED_CALLS,
    ) -> Deadline:
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if not callable(remaining):
            return cls(None, clock, calls=calls)
        budget = max(0.0, remaining() / 1000)
        margin = policy.margin_for(budget)
        return cls(clock.monotonic() + budget - margin, clock, margin / 2, calls)

    def left(self) -> float | None:
        """Seconds left before the deadline (negative once past it), None without one."""
        return None if self.ends_at is None else self.ends_at - self.clock.monotonic()

    def expired(self) -> bool:
        ends_at = self.ends_at  # `left()` inlined: asked for every message
        return ends_at is not None and ends_at <= self.clock.monotonic()

    def allows(self, seconds: float) -> bool:
        left = self.left()
        return left is None or left > seconds

    def sleep(self, seconds: float) -> bool:
        """Sleep if the deadline leaves room for it; False (without sleeping) when it does not."""
        if not self.allows(seconds):
            return False
        self.clock.sleep(seconds)
        return True

    def run(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`call(*args, **kwargs)`, but never past the deadline: raises `DeadlineReached` when no
        time is left to start it, or when it has not returned by the deadline plus `grace` (it
        then finishes unobserved). Without a deadline (`ends_at` None) the call runs inline."""
        if self.ends_at is None:
            return call(*args, **kwargs)
        return self.wait(self.start(call, *args, **kwargs))

    def start(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Hand `call` to the worker threads; `wait` for its result. Raises `DeadlineReached`
        when no time is left to start it."""
        left = self.left()
        if left is not None and left <= 0:
            raise DeadlineReached("no time left before the Lambda deadline for a network call")
        context = contextvars.copy_context()

        def task() -> T:
            if self.expired():  # queued behind other calls until too late: never sent
                raise DeadlineReached("the Lambda deadline passed before this call could start")
            _CURRENT.set(self)
            return call(*args, **kwargs)

        return self.calls.submit(lambda: context.run(task))

    def wait(self, started: Future[T]) -> T:
        """The result of a call `start`ed under this deadline, or `DeadlineReached` when it has
        not returned by the deadline plus `grace`."""
        left = self.left()
        timeout = None if left is None else max(0.0, left + self.grace)
        try:
            return started.result(timeout)
        except FutureTimeout:
            if started.done():  # the call's own TimeoutError
                raise
            raise DeadlineReached(
                f"a network call did not answer in the {timeout or 0.0:.2f} s left"
            ) from None


#: The limits and the deadline of the invocation under way, for the decoders
#: (`decoding.limits`): `(DecodingLimits or None, Deadline or None, seconds the invocation had or
#: None)`, set by `InboxConsumer.handle` and `process`.
DECODING: contextvars.ContextVar[tuple[Any, Any, float | None] | None] = contextvars.ContextVar(
    "lambda_inbox_decoding", default=None
)
#: The deadline of the bounded call running in this thread (see `Deadline.run`).
_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "inbox_deadline", default=None
)


def stop_past_deadline(**_: Any) -> None:
    """botocore `before-send` hook: no new attempt (first send or retry) of a bounded call once
    its deadline has passed, so an abandoned call stops at its next retry."""
    deadline = _CURRENT.get()
    if deadline is not None and deadline.expired():
        raise DeadlineReached("the Lambda deadline passed before this request was sent")
