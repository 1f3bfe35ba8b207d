"""The distribution: one version number, a changelog section for it, and the rules `make dist`
checks the built wheel and sdist against, each proven by the broken archive it must catch."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable

import pytest

from devkit.distribution import sdist_problems, source_modules, wheel_problems
from devkit.paths import REPO_ROOT
from lambda_inbox import __version__
from tests.cli_support import Cli

VERSION = __version__
DIST_INFO = f"lambda_inbox-{VERSION}.dist-info"
SDIST = f"lambda_inbox-{VERSION}"
#: A good archive's file list made broken in one way.
Edit = Callable[[set[str]], set[str]]


def a_good_wheel() -> list[str]:
    return [
        *source_modules(),
        *(
            f"{DIST_INFO}/{name}"
            for name in ("METADATA", "WHEEL", "RECORD", "entry_points.txt", "licenses/LICENSE")
        ),
    ]


def a_good_sdist() -> list[str]:
    files = [*source_modules().values(), "PKG-INFO", "pyproject.toml", "README.md", "LICENSE"]
    return [f"{SDIST}/{name}" for name in (*files, "CHANGELOG.md", "setup.cfg")]


# ---- one version ------------------------------------------------------------------------------


def test_the_distribution_reads_its_version_from_the_library() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "lambda_inbox.__version__"
    }
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?", VERSION)


def test_the_command_line_prints_the_librarys_version(capsys: pytest.CaptureFixture[str]) -> None:
    run = Cli(capsys)("--version")
    assert run.code == 0
    assert run.out.strip() == f"lambda-inbox {VERSION}"


def test_the_changelog_has_a_section_for_this_version() -> None:
    headings = re.findall(r"^## (\S+)", (REPO_ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert headings, "CHANGELOG.md has no version sections"
    assert headings[0] == VERSION, f"the newest section is {headings[0]}, the library is {VERSION}"


def test_the_package_page_is_the_readme_under_a_named_license() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert project["readme"] == "README.md"
    assert project["license"] == "Apache-2.0"
    assert (REPO_ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert {"Homepage", "Documentation", "Changelog"} <= project["urls"].keys()


# ---- the wheel's rules ------------------------------------------------------------------------


def test_a_wheel_with_both_packages_and_their_markers_passes() -> None:
    names = a_good_wheel()
    assert {"lambda_inbox/py.typed", "lambda_inbox_tools/py.typed"} <= set(names)
    assert "lambda_inbox_tools/testing/__init__.py" in names
    assert wheel_problems(names, VERSION) == []


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        (lambda names: names - {"lambda_inbox/py.typed"}, "missing lambda_inbox/py.typed"),
        (
            lambda names: {n for n in names if not n.startswith("lambda_inbox/store/")},
            "missing lambda_inbox/store/__init__.py",
        ),
        (
            lambda names: names - {"lambda_inbox_tools/testing/effectively_once.py"},
            "missing lambda_inbox_tools/testing/effectively_once.py",
        ),
        (lambda names: names | {"tests/test_sam_build.py"}, "unexpected tests/test_sam_build.py"),
        (lambda names: names | {"devkit/paths.py"}, "unexpected devkit/paths.py"),
        (
            lambda names: names | {"lambda_inbox/__pycache__/config.cpython-311.pyc"},
            "unexpected lambda_inbox/__pycache__/config.cpython-311.pyc",
        ),
        (
            lambda names: names - {f"{DIST_INFO}/licenses/LICENSE"},
            f"missing {DIST_INFO}/licenses/LICENSE",
        ),
    ],
    ids=["no-py.typed", "no-subpackage", "no-kit-module", "tests", "devkit", "bytecode", "license"],
)
def test_a_broken_wheel_is_named(broken: Edit, problem: str) -> None:
    names = broken(set(a_good_wheel()))
    assert problem in wheel_problems(names, VERSION)


def test_a_wheel_of_another_version_is_named() -> None:
    assert "missing lambda_inbox-9.9.9.dist-info/METADATA" in wheel_problems(
        a_good_wheel(), "9.9.9"
    )


# ---- the sdist's rules ------------------------------------------------------------------------


def test_an_sdist_with_the_sources_and_the_users_files_passes() -> None:
    assert sdist_problems(a_good_sdist(), VERSION) == []


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        (lambda names: names - {f"{SDIST}/CHANGELOG.md"}, "missing CHANGELOG.md"),
        (lambda names: names - {f"{SDIST}/LICENSE"}, "missing LICENSE"),
        (
            lambda names: names - {f"{SDIST}/tools/lambda_inbox_tools/py.typed"},
            "missing tools/lambda_inbox_tools/py.typed",
        ),
        (
            lambda names: names | {f"{SDIST}/tests/unit/test_config.py"},
            "unexpected tests/unit/test_config.py",
        ),
        (
            lambda names: names | {f"{SDIST}/DEVELOPERS.md"},
            "unexpected DEVELOPERS.md (the maintainers' guide)",
        ),
        (lambda names: names | {"stray.txt"}, f"outside {SDIST}/: stray.txt"),
    ],
    ids=["no-changelog", "no-license", "no-tools-marker", "tests", "developers-guide", "outside"],
)
def test_a_broken_sdist_is_named(broken: Edit, problem: str) -> None:
    names = broken(set(a_good_sdist()))
    assert problem in sdist_problems(names, VERSION)
