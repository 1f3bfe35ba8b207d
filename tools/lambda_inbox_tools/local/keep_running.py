"""`--keep-running` (and any template without a workload): the stack up until a signal, its
commands printed, the errors its event sources record said as they come."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from .hints import keep_running_hints
from .kafka_poller import KafkaPoller
from .stack import LocalStack
from .stream_poller import ShardPoller


class ErrorEcho:
    """Says on the console what the event sources record as errors (a failed invocation, a
    backend that refuses a read): each new error once, with its event source, and an error
    that keeps coming back once every `REPEAT_SECONDS` with its count."""

    REPEAT_SECONDS = 30.0

    def __init__(self, local: LocalStack, say: Callable[[str], None]) -> None:
        self.local, self.say = local, say
        self._seen: dict[int, int] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self._said: dict[tuple[str, str], tuple[float, int]] = {}
        self._given_up: dict[int, int] = {}

    def __call__(self) -> None:
        now = time.monotonic()
        pollers: list[KafkaPoller | ShardPoller] = [
            *self.local.kafka_pollers,
            *self.local.stream_pollers,
        ]
        for poller in pollers:
            given_up = poller.stats.given_up_batches
            if given_up > self._given_up.get(id(poller), 0):
                where = poller.destination.url or "nowhere (no on-failure queue here)"
                self.say(
                    f"{poller.label}: gave up on a batch ({given_up} so far); its on-failure "
                    f"record is in {where.rsplit('/', 1)[-1]}"
                )
                self._given_up[id(poller)] = given_up
        for runner in self.local.runners():
            errors = runner.stats.errors
            start = self._seen.get(id(errors), 0)
            self._seen[id(errors)] = len(errors)
            for error in errors[start:]:
                key = (runner.label, error)
                self._counts[key] = self._counts.get(key, 0) + 1
        for key, count in self._counts.items():
            said_at, said_count = self._said.get(key, (0.0, 0))
            if said_count == 0:
                self.say(f"{key[0]}: {key[1]}")
            elif count > said_count and now - said_at >= self.REPEAT_SECONDS:
                self.say(f"{key[0]}: {key[1]} (again: {count - said_count} more times)")
            else:
                continue
            self._said[key] = (now, count)


def keep_running(
    local: LocalStack, say: Callable[[str], None], samples: Mapping[str, str] | None = None
) -> None:
    """Print the endpoints and the commands to try (`samples`: `keep_running_hints`), then wait
    for Ctrl-C (SIGTERM and SIGHUP too: the command line turns them into the same interrupt),
    saying what the event sources record as errors meanwhile."""
    say("the stack keeps running (Ctrl-C, SIGTERM or SIGHUP stops it); in another shell:")
    for line in keep_running_hints(local, samples):
        say(f"  {line}")
    echo = ErrorEcho(local, say)
    try:
        while True:
            time.sleep(1)
            echo()
    except KeyboardInterrupt:
        say("stopping: pollers, functions and every service this command started")
