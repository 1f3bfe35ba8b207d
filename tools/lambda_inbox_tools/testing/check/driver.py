"""The check's driver: it invokes the handler as Lambda does, one invocation at a time or two at
once (`invoke_overlapping`), with a fault armed in its writes: first one invocation of new work
without one, which measures the writes a message makes, then the faults every run owes
(`schedule.owed_faults`), each on an invocation of new work, and on the others faults drawn at
`crash_rate` over the writes an invocation makes.
Each invocation ends as Lambda sees it (`local.invoker.Invocation`): a response, or a failure
(the handler raised, or the runtime died)."""

from __future__ import annotations

import math
import random
import traceback
from collections.abc import Callable
from typing import Any, Protocol

from ...local.invoker import Invocation
from ..crashes import CrashSwitch, InjectedCrash, UncoveredWrite, When
from .overlap import overlapping
from .report import NotEffectivelyOnce, Report
from .schedule import KINDS, owed_faults

__all__ = ["FAILING", "Driver"]

#: Failed invocations after which a run stops: in a row, or while messages wait, none of them
#: acknowledged meanwhile (whatever other lanes deliver again of what they took before). The
#: handler fails on its own: a batch it can never take.
FAILING = 50


class Reads(Protocol):
    """What serves the handler's reads while it runs (`dynamodb.stale.StaleReads`)."""

    def begin(self) -> None: ...

    def end(self) -> None: ...


class Driver:
    """Invokes the handler (`call`) with a fault armed (see the module)."""

    def __init__(
        self,
        call: Callable[[dict[str, Any]], Any],
        switch: CrashSwitch | None,
        stale: Reads | None,
        rng: random.Random,
        report: Report,
        crash_rate: float,
        limit: int,
    ) -> None:
        self.call, self.switch, self.stale, self.rng = call, switch, stale, rng
        self.report, self.crash_rate, self.limit = report, crash_rate, limit
        #: The faults owed, in order: kinds until the first invocation of new work measured the
        #: writes a message makes (`probed`), then (kind, write).
        self.owed: list[tuple[When, int]] = []
        self.probed = not (crash_rate > 0 and switch is not None)
        #: The most writes an invocation made without a fault (what a fault is drawn over).
        self.most_writes = 1
        self.last_error: BaseException | None = None
        #: The kind of the fault that fired in the last invocation, if one did, and its write.
        self.last_fault: str | None = None
        self.last_fault_write = 0
        #: Failed invocations in a row, and since a message was last acknowledged for the first
        #: time while some still wait (`waiting`).
        self.failing_in_a_row = 0
        self.failing_without_progress = 0
        self.waiting = True
        #: Whether any invocation wrote (a fault can fire only in one that does).
        self.wrote = False
        #: Set for the rounds played at the end for owed faults: no first deliveries are left.
        self.last_round = False

    @property
    def faults_owed(self) -> int:
        """The owed faults that have not fired (before the writes are measured, the kinds and
        the measuring invocation)."""
        return len(KINDS) + 1 if not self.probed else len(self.owed)

    @property
    def can_overlap(self) -> bool:
        """Whether two invocations can be played at once (the clients are known)."""
        return self.switch is not None

    def invoke_overlapping(self, events: list[tuple[dict[str, Any], int]]) -> list[Invocation]:
        """Invocations at once on threads of their own, no fault armed (`check.overlap`); the
        run's first measures the writes a message makes."""
        if self.switch is None:
            raise ValueError("overlapping invocations need the handler's clients")
        switch = self.switch
        self.report.invocations += len(events)
        self.report.deliveries += sum(size for _, size in events)
        self.report.overlaps += 1
        writes: list[int] = []

        def invocation(event: dict[str, Any], size: int) -> Callable[[], Invocation]:
            def run() -> Invocation:
                switch.start_mine()
                try:
                    return self._answer(event)
                finally:
                    writes.append(math.ceil(switch.mine / max(1, size)))

            return run

        self.last_fault = None
        answers = overlapping([invocation(e, n) for e, n in events], switch.clients)
        self.wrote = self.wrote or any(writes)
        if not self.probed:
            self._measured(max(writes, default=0))
        return list(answers)

    def invoke(self, event: dict[str, Any], size: int, fresh: bool = True) -> Invocation:
        """One invocation of `event` (`size` records); `fresh`: it starts with new work."""
        report = self.report
        report.invocations += 1
        report.deliveries += size
        if report.invocations > self.limit:
            self._unfinished(f"after {self.limit} invocations")
        if self.failing_in_a_row >= FAILING:
            self._unfinished(f"after {FAILING} invocations failing in a row")
        if self.failing_without_progress >= FAILING:
            self._unfinished(
                f"after {FAILING} failed invocations while none of them was acknowledged"
            )
        new_work = fresh or self.last_round
        probing, owed_now = new_work and not self.probed, False
        fault: tuple[When, int] | None = None
        if self.owed and self.switch is not None and new_work:  # an owed fault, on new work
            fault, owed_now = self.owed[0], True
        elif not probing:
            fault = self._drawn()
        if self.switch is not None:
            self.switch.start()
            if fault is not None:
                self.switch.arm(*fault)
        try:
            answer = self._answer(event)
        finally:
            self._settle(fault, owed_now)
        if probing and self.switch is not None:
            self._measured(math.ceil(self.switch.writes / max(1, size)))
        self.failing_in_a_row = self.failing_in_a_row + 1 if answer.failed else 0
        if answer.failed and self.waiting:
            self.failing_without_progress += 1
        return answer

    def progressed(self, *, waiting: bool) -> None:
        """A message was acknowledged for the first time; `waiting`: others still wait."""
        self.failing_without_progress = 0
        self.waiting = waiting

    def _answer(self, event: dict[str, Any]) -> Invocation:
        """The handler's answer, as the event source sees it."""
        if self.stale is not None:
            self.stale.begin()
        try:
            return Invocation(self.call(event), None, 0.0)
        except UncoveredWrite:
            raise
        except InjectedCrash as crash:  # the runtime died: no response
            return Invocation(None, f"crashed: {crash}", 0.0)
        except Exception as error:  # a failed invocation: the event source delivers it again
            self.report.raised += 1
            self.last_error = error
            return Invocation(None, f"{type(error).__name__}: {error}", 0.0)
        finally:
            if self.stale is not None:
                self.stale.end()

    def _measured(self, writes: int) -> None:
        """The writes a message of new work made: the faults owed at them (`schedule`)."""
        self.probed = True
        self.report.writes_per_message = max(1, writes)
        self.owed = owed_faults(self.report.seed, self.report.writes_per_message)

    def _drawn(self) -> tuple[When, int] | None:
        """A fault drawn at `crash_rate`, at a write drawn over those an invocation makes."""
        if self.switch is None or not self.crash_rate or self.rng.random() >= self.crash_rate:
            return None
        kind: When = self.rng.choice(KINDS)[0]
        return kind, self.rng.randint(1, self.most_writes)

    @property
    def wrote_before_the_fault(self) -> bool:
        """Whether the fault of the last invocation fell after a write had landed."""
        return self.last_fault in ("after", "lost") or (
            self.last_fault is not None and self.last_fault_write > 1
        )

    def _settle(self, fault: tuple[When, int] | None, owed: bool) -> None:
        self.last_fault = None
        if self.switch is None:
            return
        fired = fault is not None and self.switch.disarm()
        self.report.dynamodb.update(self.switch.answered)
        if fired and fault is not None:
            kind, write = fault
            self.last_fault, self.last_fault_write = kind, write
            self.report.crashes[kind] += 1
            self.report.fault_writes[write] += 1
            self.report.positions.setdefault(kind, set()).add(write)
            if owed:
                self.owed.pop(0)
        else:
            self.most_writes = max(self.most_writes, self.switch.writes)
        self.wrote = self.wrote or self.switch.writes > 0 or fired
        self.switch.fired.clear()

    def _unfinished(self, when: str) -> None:
        text = f"messages still unacknowledged {when}"
        if self.last_error is not None:
            frame = traceback.extract_tb(self.last_error.__traceback__)[-1:]
            where = f" ({frame[0].filename}:{frame[0].lineno} in {frame[0].name})" if frame else ""
            text += (
                f"; the handler raised {self.report.raised} times, last "
                f"{type(self.last_error).__name__}: {self.last_error}{where}"
            )
        self.report.unfinished = text
        raise NotEffectivelyOnce(self.report)
