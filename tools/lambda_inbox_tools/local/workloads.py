"""The hook through which `lambda-inbox local` drives a workload through a template's stack and
reports on it, and how it finds one.

The stack is generic: any SAM template's tables, queues and event sources. A workload brings
the traffic of one application and the checks of its effects. This repository's demo (orders,
payments and notifications for its own template.yaml: `devkit.demo`) is one, and it is not part
of this package. A workload is any object with the attributes of `Workload`, found

- by `--workload MODULE:ATTR` (`Options.workload`; `make demo` names `devkit.demo.plugin:WORKLOAD`),
  which runs it unless `--no-demo`, and fails when it does not fit the template; else
- among the entry points of the group `lambda_inbox.local_workloads` of the installed
  distributions (devkit/pyproject.toml registers the demo), the first that fits the template.
  It runs unless `--no-demo`; `--demo` fails when none fits.

A run with a workload: `session(options)` is entered before the stack starts (a webhook receiver,
say, whose URL `parameters` gives the template), then `drive(driving)` gets the provisioned stack
with its event sources not started yet, starts them (`local.start()`), sends its traffic, waits
with `driving.settle` and returns the `Report`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Protocol

from .options import Options
from .report import Report
from .stack import LocalStack
from .template import Stack

ENTRY_POINT_GROUP = "lambda_inbox.local_workloads"


class WorkloadDoesNotFit(Exception):
    """A workload was asked for (`--demo`, `--workload`) that cannot run on this template."""


@dataclass(frozen=True)
class Driving:
    """What a workload's session drives the stack with."""

    local: LocalStack
    options: Options
    #: `settle(done, grace)`: wait, showing progress, until nothing is pending and `done()`
    #: holds, at most until the run's deadline plus `grace` seconds; whether it settled.
    settle: Callable[[Callable[[], bool], float], bool]
    #: Seconds since the run started.
    elapsed: Callable[[], float]


class Session(Protocol):
    """One run of a workload, from before the stack starts to its report."""

    @property
    def parameters(self) -> Mapping[str, str]:
        """Defaults for the template's parameters (those it declares), e.g. a receiver's URL."""
        ...

    def describe(self) -> str:
        """The line said when the workload starts."""
        ...

    def drive(self, driving: Driving) -> Report:
        """Start the event sources, send the traffic, wait for it, check it."""
        ...


class Workload(Protocol):
    def misfit(self, stack: Stack) -> str | None:
        """Why the workload cannot run on `stack` (None: it can)."""
        ...

    def sample_bodies(self) -> Mapping[str, str]:
        """A message body per queue (logical ID) for the printed `send` lines (others: `{}`)."""
        ...

    def session(self, options: Options) -> AbstractContextManager[Session]:
        """What runs beside the stack for one run, started before it and stopped after it."""
        ...


def load(spec: str) -> Workload:
    """`MODULE:ATTR` -> that object; ValueError saying why when there is none."""
    module, sep, attribute = spec.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"{spec!r} is not MODULE:ATTR")
    try:
        workload: Workload = getattr(importlib.import_module(module), attribute)
    except ImportError as error:
        raise ValueError(f"{module} cannot be imported: {error}") from None
    except AttributeError:
        raise ValueError(f"{module} has no {attribute}") from None
    return workload


def installed() -> Iterator[Workload]:
    """The workloads the installed distributions register, in name order."""
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        workload: Workload = entry.load()
        yield workload


def fitting(stack: Stack, options: Options) -> tuple[Workload | None, bool]:
    """The workload for this template, and whether it runs (the run's `Options.demo`).

    Raises WorkloadDoesNotFit when one must run (`--demo`, `--workload`) and none can."""
    if options.workload is not None:
        named = load(options.workload)
        reason = named.misfit(stack)
        if reason is not None:
            if options.demo is False:
                return None, False
            raise WorkloadDoesNotFit(reason)
        return named, options.demo is not False
    first_reason = None
    for workload in installed():
        reason = workload.misfit(stack)
        if reason is None:
            return workload, options.demo is not False
        first_reason = first_reason or reason
    if options.demo:
        raise WorkloadDoesNotFit(
            first_reason or f"no workload is installed (entry point group {ENTRY_POINT_GROUP})"
        )
    return None, False
