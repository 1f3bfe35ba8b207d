"""ScheduleV2 (EventBridge Scheduler) emulated: `rate(...)` expressions, scaled down locally.

`rate(5 minutes)` with a time scale of 1/30 fires every 10 s. The target gets what AWS sends
(tests/fixtures/aws/): for `ScheduleV2` (EventBridge Scheduler) the schedule's `Input`, its
context attributes (`<aws.scheduler.scheduled-time>` ...) replaced, or an empty event without
one; for `Schedule` (an EventBridge rule) the `Input`, or the "Scheduled Event" document.
`cron(...)` and `at(...)` expressions are reported as unsupported locally and not run.
Invocations never overlap; a failed run is not retried (the template's RetryPolicy of the reaper
is 0 retries; the next tick is the retry).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .invoker import Invoker
from .loop import PollingLoop
from .on_failure import iso_seconds
from .template import ACCOUNT, REGION, FunctionSpec, ScheduleEventSpec

_UNITS = {"minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400}
_RATE = re.compile(r"^rate\(\s*(\d+)\s+([a-z]+)\s*\)$")


class UnsupportedSchedule(ValueError):
    """Only rate(...) expressions run locally."""


def rate_seconds(expression: str) -> int:
    """The period of a `rate(N unit)` expression in seconds."""
    match = _RATE.match(expression.strip())
    if match is None or match.group(2) not in _UNITS:
        raise UnsupportedSchedule(f"{expression!r}: only rate(N minutes|hours|days) runs locally")
    value = int(match.group(1))
    unit = match.group(2)
    if (value == 1) != unit.endswith(("minute", "hour", "day")):
        raise UnsupportedSchedule(f"{expression!r}: use rate(1 minute) or rate(N minutes)")
    return value * _UNITS[unit]


def scaled_period(expression: str, scale: float, minimum: float = 1.0) -> float:
    return max(minimum, rate_seconds(expression) * scale)


@dataclass
class ScheduleStats:
    invocations: int = 0
    failed_invocations: int = 0
    responses: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Scheduler:
    """Invokes `function` every scaled period until `stop()`; the first run is one period in."""

    def __init__(
        self, function: FunctionSpec, event: ScheduleEventSpec, invoker: Invoker, scale: float
    ) -> None:
        self.function = function
        self.event = event
        self.invoker = invoker
        self.period = scaled_period(event.expression, scale)
        self.stats = ScheduleStats()
        self._loop = PollingLoop(
            self.label, self.tick, errors=self.stats.errors, interval=self.period, join_timeout=30
        )

    @property
    def label(self) -> str:
        return f"{self.event.expression} (every {self.period:g} s) -> {self.function.logical_id}"

    @property
    def schedule_arn(self) -> str:
        if self.event.kind == "Schedule":
            return f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{self.function.name}-{self.event.name}"
        return f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/default/{self.function.name}-{self.event.name}"

    def payload(self) -> Any:
        """The event of one run (see the module)."""
        now = time.time()
        if self.event.input is not None:
            text = self.event.input
            if self.event.kind == "ScheduleV2":
                for name, value in {
                    "schedule-arn": self.schedule_arn,
                    "scheduled-time": iso_seconds(now),
                    "execution-id": uuid.uuid4().hex[:16],
                    "attempt-number": "1",
                }.items():
                    text = text.replace(f"<aws.scheduler.{name}>", value)
            return json.loads(text)
        if self.event.kind == "ScheduleV2":
            return {}
        return {
            "version": "0",
            "account": ACCOUNT,
            "region": REGION,
            "detail": {},
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "time": iso_seconds(now),
            "id": str(uuid.uuid4()),
            "resources": [self.schedule_arn],
        }

    def tick(self) -> Any:
        invocation = self.invoker.invoke(self.function, self.payload())
        self.stats.invocations += 1
        if invocation.failed:
            self.stats.failed_invocations += 1
            self.stats.errors.append(str(invocation.error))
        else:
            self.stats.responses.append(invocation.response)
        return invocation.response

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()
