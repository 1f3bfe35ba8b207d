"""The workload hook of `lambda-inbox local` (lambda_inbox_tools.local.workloads): which workload
runs on which template, by `--workload`, by entry point, with `--demo` / `--no-demo`; and the
demo (devkit.demo) found through the entry point devkit registers. No services needed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from devkit.demo.plugin import WORKLOAD, DemoWorkload
from devkit.paths import REPO_ROOT
from lambda_inbox_tools.local import workloads
from lambda_inbox_tools.local.options import Options
from lambda_inbox_tools.local.report import Report
from lambda_inbox_tools.local.stack import read_local_stack
from lambda_inbox_tools.local.template import Stack
from lambda_inbox_tools.local.workloads import Driving, WorkloadDoesNotFit, fitting, load

ROOT = REPO_ROOT
TEMPLATE = ROOT / "template.yaml"
INVOICES = ROOT / "examples" / "invoices" / "template.yaml"


def stack_of(template: Path) -> Stack:
    return read_local_stack(template, sqs_endpoint="http://127.0.0.1:4566")


class Fussy:
    """A workload that fits only the invoices example."""

    def misfit(self, stack: Stack) -> str | None:
        names = {queue.logical_id for queue in stack.queues}
        return None if "InvoicesQueue" in names else "needs the invoices example"

    def sample_bodies(self) -> Mapping[str, str]:
        return {}

    @contextmanager
    def session(self, options: Options) -> Iterator[Any]:
        class Session:
            parameters: Mapping[str, str] = {}

            def describe(self) -> str:
                return "fussy"

            def drive(self, driving: Driving) -> Report:
                return Report({})

        yield Session()


FUSSY = Fussy()


def test_the_demo_is_installed_by_its_entry_point() -> None:
    assert any(isinstance(workload, DemoWorkload) for workload in workloads.installed())


def test_the_demo_fits_this_repositorys_template_only() -> None:
    assert WORKLOAD.misfit(stack_of(TEMPLATE)) is None
    reason = WORKLOAD.misfit(stack_of(INVOICES))
    assert reason is not None and "needs this repository's template (missing: " in reason


@pytest.mark.parametrize(
    ("template", "demo", "runs"),
    [(TEMPLATE, None, True), (TEMPLATE, False, False), (INVOICES, None, False)],
)
def test_an_installed_workload_runs_where_it_fits(
    template: Path, demo: bool | None, runs: bool
) -> None:
    found, drive = fitting(stack_of(template), Options(template, demo=demo))
    assert drive is runs
    # Its sample bodies serve the printed commands even when it does not run.
    assert isinstance(found, DemoWorkload) is (template == TEMPLATE)


def test_demo_on_a_template_no_workload_fits_is_an_error() -> None:
    with pytest.raises(WorkloadDoesNotFit, match="missing: "):
        fitting(stack_of(INVOICES), Options(INVOICES, demo=True))


def test_a_named_workload_runs_instead_of_the_installed_ones() -> None:
    spec = f"{__name__}:FUSSY"
    assert load(spec) is FUSSY
    assert fitting(stack_of(INVOICES), Options(INVOICES, workload=spec)) == (FUSSY, True)
    with pytest.raises(WorkloadDoesNotFit, match="needs the invoices example"):
        fitting(stack_of(TEMPLATE), Options(TEMPLATE, workload=spec))
    assert fitting(stack_of(TEMPLATE), Options(TEMPLATE, workload=spec, demo=False)) == (
        None,
        False,
    )


def test_a_workload_spec_is_module_colon_attribute() -> None:
    with pytest.raises(ValueError, match="MODULE:ATTR"):
        load("devkit.demo.plugin")


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("no_such_module_here:WORKLOAD", "cannot be imported"),
        ("devkit.demo.plugin:NO_SUCH_WORKLOAD", "has no NO_SUCH_WORKLOAD"),
    ],
)
def test_a_workload_that_cannot_be_loaded_is_said_in_one_line(spec: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        load(spec)


def test_the_command_refuses_a_bad_workload_before_anything_starts() -> None:
    from typer.testing import CliRunner

    from lambda_inbox_tools.cli.app import app

    done = CliRunner().invoke(
        app, ["local", "--template", str(TEMPLATE), "--workload", "no_such_module_here:W"]
    )
    assert done.exit_code == 2
    assert "Invalid value for --workload" in done.output
    assert "Traceback" not in done.output
