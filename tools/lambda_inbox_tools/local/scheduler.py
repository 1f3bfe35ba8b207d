"""ScheduleV2 (EventBridge Scheduler) emulated: `rate(...)` expressions, scaled down locally.

`rate(5 minutes)` with a time scale of 1/30 fires every 10 s. The target gets the schedule's
`Input` (JSON) or `{}`. `cron(...)` and `at(...)` expressions are reported as unsupported
locally and not run. Invocations never overlap; a failed run is not retried (the template's
RetryPolicy of the reaper is 0 retries; the next tick is the retry).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .invoker import Invoker
from .loop import PollingLoop
from .template import FunctionSpec, ScheduleEventSpec

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
        self.payload: dict[str, Any] = json.loads(event.input) if event.input else {}
        self.stats = ScheduleStats()
        self._loop = PollingLoop(
            self.label, self.tick, errors=self.stats.errors, interval=self.period, join_timeout=30
        )

    @property
    def label(self) -> str:
        return f"{self.event.expression} (every {self.period:g} s) -> {self.function.logical_id}"

    def tick(self) -> Any:
        invocation = self.invoker.invoke(self.function, self.payload)
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
