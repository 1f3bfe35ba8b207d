"""Crashes injected into in-process functions, before or after the Nth call of an operation
(a commit unless named): the invocation dies and its batch comes back."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from lambda_inbox_tools.local.invoker import InjectedCrash, InProcessInvoker, boto_clients


@dataclass
class CrashPlan:
    """Crash the Nth call of `operation` (a commit unless given) of a function, before the call
    is sent or after it answered."""

    function: str
    nth: int
    when: str  # "before" | "after"
    operation: str = "dynamodb.TransactWriteItems"
    fired: bool = False

    def __str__(self) -> str:
        name = "commit" if self.operation == "dynamodb.TransactWriteItems" else self.operation
        return f"{self.function} {self.when} {name} #{self.nth}"


class Crashes:
    def __init__(self, plans: list[CrashPlan]) -> None:
        self.plans = plans
        self.count: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def install(self, invoker: InProcessInvoker) -> None:
        operations = {plan.operation for plan in self.plans}
        for logical_id, module in invoker.modules.items():
            for client in boto_clients(module):
                service = client.meta.service_model.service_name
                for operation in operations:
                    if not operation.startswith(f"{service}."):
                        continue
                    for when in ("before", "after"):
                        client.meta.events.register(
                            f"{when}-call.{operation}", self._hook(logical_id, when, operation)
                        )

    def _hook(self, function: str, when: str, operation: str) -> Any:
        def hook(**_: Any) -> None:
            with self._lock:
                if when == "before":
                    self.count[(function, operation)] += 1
                for plan in self.plans:
                    if (plan.function, plan.operation, plan.when, plan.fired) == (
                        function,
                        operation,
                        when,
                        False,
                    ) and self.count[(function, operation)] == plan.nth:
                        plan.fired = True
                        raise InjectedCrash(str(plan))

        return hook

    @property
    def fired(self) -> list[CrashPlan]:
        return [plan for plan in self.plans if plan.fired]
