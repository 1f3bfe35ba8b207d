"""The report of a local run: a workload's checks, its summary lines and one JSON document.

The document starts with what any run knows (`run_facts`: time, how the functions ran, which
DynamoDB) and ends with the checks (`invariants`) and the verdict (`ok`); a workload fills the
middle with its own counts (`devkit.demo.report` for this repository's demo).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .stack import LocalStack


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Report:
    document: dict[str, Any]
    checks: list[Check] = field(default_factory=list)
    #: (name, value) lines the terminal shows above the checks.
    summary: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    @classmethod
    def of(
        cls,
        document: dict[str, Any],
        checks: Sequence[Check],
        summary: Sequence[tuple[str, str]] = (),
    ) -> Report:
        """`document` with the checks and the verdict added at its end."""
        document["invariants"] = {c.name: {"ok": c.ok, "detail": c.detail} for c in checks}
        document["ok"] = all(c.ok for c in checks)
        return cls(document, list(checks), list(summary))


def run_facts(local: LocalStack, elapsed: float) -> dict[str, Any]:
    """The start of every report's document: seconds, how the functions ran, which DynamoDB."""
    return {
        "seconds": round(elapsed, 1),
        "invocation": "in-process" if local.in_process else "endpoint",
        "invoke_endpoint": local.invoke_endpoint,
        "dynamodb": local.endpoints.dynamodb_backend,
        "dynamodb_endpoint": local.endpoints.dynamodb,
    }


def invocation_counts(local: LocalStack) -> dict[str, dict[str, int]]:
    """Invocations and failed invocations per event source."""
    return {
        runner.label: {
            "invocations": runner.stats.invocations,
            "failed": runner.stats.failed_invocations,
        }
        for runner in local.runners()
    }
