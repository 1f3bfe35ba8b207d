"""Two invocations holding the same messages at once, as when an SQS visibility timeout lapses
while the first invocation still runs, a Kafka partition moves to another poller, or a stream's
invocation is retried while it still runs: on real threads, each invocation's first DynamoDB write
held until the other has reached its own (or finished, or `MEET_SECONDS` passed), so both have
read what they read before either writes: the interleaving a read-then-write without a
condition does not survive.

Each DynamoDB request of the overlapping invocations is atomic, as DynamoDB's are (a transaction
is isolated from every other request): moto's in-process backend is not, and two transactions
interleaved inside it lose writes no real table would lose. So the requests take turns
(`_OneRequestAtATime`), and the invocations interleave between requests, as on AWS.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..crashes import WRITE_OPERATIONS

__all__ = ["MEET_SECONDS", "overlapping"]

#: How long a first write waits for the other invocation's before going on alone.
MEET_SECONDS = 2.0


class _Meeting:
    """The first writes of the threads that `join` wait for one another."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=MEET_SECONDS)
        self.local = threading.local()

    def join(self) -> None:
        self.local.member = True

    def leave(self) -> None:
        """A thread done: the others no longer wait for its first write."""
        if not getattr(self.local, "met", False):
            self.barrier.abort()

    def hook(self, model: Any = None, **_: Any) -> None:
        if getattr(model, "name", "") not in WRITE_OPERATIONS:
            return
        if not getattr(self.local, "member", False) or getattr(self.local, "met", False):
            return
        self.local.met = True
        with contextlib.suppress(threading.BrokenBarrierError):
            self.barrier.wait()


class _OneRequestAtATime:
    """A lock held from a DynamoDB call's `before-call` to its `after-call` (or
    `after-call-error`), first among the service's hooks but after those registered before it
    (an injected crash or answer, a stale read's bookkeeping, the meeting), so a call they end
    never takes the lock, and before devkit's memory DynamoDB answers. A crash after a call that
    keeps the lock gives it back at the thread's next call's end, or when its invocation ends."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.local = threading.local()

    def take(self, **_: Any) -> None:
        if not getattr(self.local, "held", False):  # still held: its last call never ended
            self.lock.acquire()
            self.local.held = True

    def give_back(self, **_: Any) -> None:
        if getattr(self.local, "held", False):
            self.local.held = False
            self.lock.release()


def overlapping(calls: Sequence[Callable[[], Any]], clients: Iterable[Any]) -> list[Any]:
    """Run `calls` each on a thread of its own, released together, their first DynamoDB writes
    through `clients` meeting; their results, in order. An exception in a thread is raised here
    once all have ended."""
    meeting = _Meeting(len(calls))
    turns = _OneRequestAtATime()
    hooked: list[tuple[Any, str, str]] = []
    for client in clients:
        events = client.meta.events
        # The meeting first, then the turn: a first write waits for the other's without the
        # turn, which it takes only to go in.
        for event, hook, name in (
            ("before-call.dynamodb", meeting.hook, "meeting"),
            ("before-call.dynamodb", turns.take, "take"),
            ("after-call.dynamodb", turns.give_back, "give-back"),
            ("after-call-error.dynamodb", turns.give_back, "give-back"),
        ):
            unique = f"lambda-inbox-overlap-{id(turns)}-{name}-{event}"
            events.register_first(event, hook, unique_id=unique)
            hooked.append((client, event, unique))
    start = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        meeting.join()
        try:
            start.wait()
            results[index] = calls[index]()
        except BaseException as error:  # raised again by the calling thread
            errors.append(error)
        finally:
            turns.give_back()  # a call that ended between its before-call and after-call
            meeting.leave()

    threads = [
        threading.Thread(target=run, args=(n,), name=f"overlap-{n}") for n in range(len(calls))
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for client, event, unique in hooked:
            client.meta.events.unregister(event, unique_id=unique)
    if errors:
        raise errors[0]
    return results
