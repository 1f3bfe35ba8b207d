"""The two distributions: one version number, a changelog section for it, and the rules `make dist`
checks the built wheels and sdists against (file lists and published requirements), each proven
by the broken archive or metadata it must catch."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable

import pytest

from devkit.distribution import (
    LIBRARY,
    TOOLS,
    Distribution,
    floor_problems,
    metadata_problems,
    pyproject_requirements,
    sdist_problems,
    source_modules,
    wheel_problems,
)
from devkit.paths import REPO_ROOT
from lambda_inbox import __version__
from tests.cli_support import Cli

VERSION = __version__
#: A good archive's file list made broken in one way.
Edit = Callable[[set[str]], set[str]]


def a_good_wheel(dist: Distribution) -> list[str]:
    dist_info = f"{dist.stem}-{VERSION}.dist-info"
    return [*source_modules(dist), *(f"{dist_info}/{name}" for name in dist.dist_info_files)]


def a_good_sdist(dist: Distribution) -> list[str]:
    files = [*source_modules(dist).values(), *dist.sdist_files, "setup.cfg"]
    return [f"{dist.stem}-{VERSION}/{name}" for name in files]


# ---- one version ------------------------------------------------------------------------------


def test_the_library_reads_its_version_from_the_library() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "lambda_inbox.__version__"
    }
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?", VERSION)


def test_the_tools_carry_the_librarys_version() -> None:
    """tools/pyproject.toml's static version is `lambda_inbox.__version__` (a release sets both;
    the pins between the two distributions are the metadata rule's, below)."""
    *_, tools_version = pyproject_requirements(TOOLS)
    assert tools_version == VERSION


def test_the_command_line_prints_the_librarys_version(capsys: pytest.CaptureFixture[str]) -> None:
    run = Cli(capsys)("--version")
    assert run.code == 0
    assert run.out.strip() == f"lambda-inbox {VERSION}"


def test_the_changelog_has_a_section_for_this_version() -> None:
    headings = re.findall(r"^## (\S+)", (REPO_ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert headings, "CHANGELOG.md has no version sections"
    assert headings[0] == VERSION, f"the newest section is {headings[0]}, the library is {VERSION}"


@pytest.mark.parametrize("dist", [LIBRARY, TOOLS], ids=["library", "tools"])
def test_each_package_page_is_a_readme_under_a_named_license(dist: Distribution) -> None:
    project = tomllib.loads((dist.project / "pyproject.toml").read_text())["project"]
    assert project["readme"] == "README.md" and (dist.project / "README.md").is_file()
    assert project["license"] == "Apache-2.0"
    assert (dist.project / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert {"Homepage", "Documentation", "Changelog"} <= project["urls"].keys()


# ---- the published requirements ---------------------------------------------------------------


@pytest.mark.parametrize("dist", [LIBRARY, TOOLS], ids=["library", "tools"])
def test_each_pyproject_publishes_what_the_rules_allow(dist: Distribution) -> None:
    requires, extras, _ = pyproject_requirements(dist)
    assert metadata_problems(dist, VERSION, requires, extras) == []


def test_the_library_requires_no_boto3_and_the_tools_do() -> None:
    library, _, _ = pyproject_requirements(LIBRARY)
    assert [line for line in library if line.startswith("boto3")] == [
        'boto3>=1.34.101; extra == "boto3"'
    ]
    tools, _, _ = pyproject_requirements(TOOLS)
    assert "boto3>=1.34.101" in tools


@pytest.mark.parametrize(
    ("dist", "requires", "extras", "problem"),
    [
        (LIBRARY, [], ["test"], "unexpected extra 'test'"),
        (LIBRARY, [], ["dev"], "unexpected extra 'dev'"),
        (LIBRARY, ["boto3>=1.34"], [], "boto3>=1.34: required outside an extra"),
        (LIBRARY, ["botocore>=1.34"], [], "botocore>=1.34: required outside an extra"),
        (
            LIBRARY,
            ['lambda-inbox-tools[cli]>=0.1; extra == "cli"'],
            [],
            'lambda-inbox-tools[cli]>=0.1; extra == "cli": not pinned at this version',
        ),
        (TOOLS, ["lambda-inbox==9.9.9"], [], "lambda-inbox==9.9.9: not pinned at this version"),
        (TOOLS, [], ["kafka-codecs"], "unexpected extra 'kafka-codecs'"),
    ],
    ids=["test-extra", "dev-extra", "boto3", "botocore", "tools-range", "library-pin", "foreign"],
)
def test_broken_metadata_is_named(
    dist: Distribution, requires: list[str], extras: list[str], problem: str
) -> None:
    good_requires, good_extras, _ = pyproject_requirements(dist)
    found = metadata_problems(dist, VERSION, [*good_requires, *requires], [*good_extras, *extras])
    assert any(p.startswith(problem) for p in found), found


def test_an_extra_dropped_is_named() -> None:
    requires, extras, _ = pyproject_requirements(LIBRARY)
    found = metadata_problems(LIBRARY, VERSION, requires, [e for e in extras if e != "testing"])
    assert found == ["missing extra 'testing'"]


# ---- the wheels' rules ------------------------------------------------------------------------


def test_each_wheel_holds_its_own_package_and_marker() -> None:
    library, tools = a_good_wheel(LIBRARY), a_good_wheel(TOOLS)
    assert "lambda_inbox/py.typed" in library
    assert not [n for n in library if n.startswith("lambda_inbox_tools")]
    assert {"lambda_inbox_tools/py.typed", "lambda_inbox_tools/testing/__init__.py"} <= set(tools)
    assert wheel_problems(LIBRARY, library, VERSION) == []
    assert wheel_problems(TOOLS, tools, VERSION) == []


@pytest.mark.parametrize(
    ("dist", "broken", "problem"),
    [
        (
            LIBRARY,
            lambda names: names - {"lambda_inbox/py.typed"},
            "missing lambda_inbox/py.typed",
        ),
        (
            LIBRARY,
            lambda names: {n for n in names if not n.startswith("lambda_inbox/store/")},
            "missing lambda_inbox/store/__init__.py",
        ),
        (
            LIBRARY,
            lambda names: names | {"lambda_inbox_tools/cli/__init__.py"},
            "unexpected lambda_inbox_tools/cli/__init__.py",
        ),
        (
            TOOLS,
            lambda names: names - {"lambda_inbox_tools/testing/effectively_once.py"},
            "missing lambda_inbox_tools/testing/effectively_once.py",
        ),
        (
            TOOLS,
            lambda names: names | {"lambda_inbox/_consumer.py"},
            "unexpected lambda_inbox/_consumer.py",
        ),
        (
            TOOLS,
            lambda names: names - {f"lambda_inbox_tools-{VERSION}.dist-info/entry_points.txt"},
            f"missing lambda_inbox_tools-{VERSION}.dist-info/entry_points.txt",
        ),
        (
            LIBRARY,
            lambda names: names | {"tests/test_sam_build.py"},
            "unexpected tests/test_sam_build.py",
        ),
        (LIBRARY, lambda names: names | {"devkit/paths.py"}, "unexpected devkit/paths.py"),
        (
            LIBRARY,
            lambda names: names | {"lambda_inbox/__pycache__/config.cpython-311.pyc"},
            "unexpected lambda_inbox/__pycache__/config.cpython-311.pyc",
        ),
        (
            LIBRARY,
            lambda names: names - {f"lambda_inbox-{VERSION}.dist-info/licenses/LICENSE"},
            f"missing lambda_inbox-{VERSION}.dist-info/licenses/LICENSE",
        ),
    ],
    ids=[
        "no-py.typed",
        "no-subpackage",
        "tools-in-library",
        "no-kit-module",
        "library-in-tools",
        "no-entry-points",
        "tests",
        "devkit",
        "bytecode",
        "license",
    ],
)
def test_a_broken_wheel_is_named(dist: Distribution, broken: Edit, problem: str) -> None:
    names = broken(set(a_good_wheel(dist)))
    assert problem in wheel_problems(dist, names, VERSION)


def test_a_wheel_of_another_version_is_named() -> None:
    assert "missing lambda_inbox-9.9.9.dist-info/METADATA" in wheel_problems(
        LIBRARY, a_good_wheel(LIBRARY), "9.9.9"
    )


# ---- the sdists' rules ------------------------------------------------------------------------


def test_each_sdist_with_its_sources_and_the_users_files_passes() -> None:
    assert sdist_problems(LIBRARY, a_good_sdist(LIBRARY), VERSION) == []
    assert sdist_problems(TOOLS, a_good_sdist(TOOLS), VERSION) == []


SDIST = f"lambda_inbox-{VERSION}"
TOOLS_SDIST = f"lambda_inbox_tools-{VERSION}"


@pytest.mark.parametrize(
    ("dist", "broken", "problem"),
    [
        (LIBRARY, lambda names: names - {f"{SDIST}/CHANGELOG.md"}, "missing CHANGELOG.md"),
        (LIBRARY, lambda names: names - {f"{SDIST}/LICENSE"}, "missing LICENSE"),
        (
            LIBRARY,
            lambda names: names | {f"{SDIST}/tools/lambda_inbox_tools/cli/app.py"},
            "unexpected tools/lambda_inbox_tools/cli/app.py",
        ),
        (
            TOOLS,
            lambda names: names - {f"{TOOLS_SDIST}/lambda_inbox_tools/py.typed"},
            "missing lambda_inbox_tools/py.typed",
        ),
        (TOOLS, lambda names: names - {f"{TOOLS_SDIST}/README.md"}, "missing README.md"),
        (
            LIBRARY,
            lambda names: names | {f"{SDIST}/tests/unit/consumer/test_config.py"},
            "unexpected tests/unit/consumer/test_config.py",
        ),
        (
            LIBRARY,
            lambda names: names | {f"{SDIST}/DEVELOPERS.md"},
            "unexpected DEVELOPERS.md (the maintainers' guide)",
        ),
        (LIBRARY, lambda names: names | {"stray.txt"}, f"outside {SDIST}/: stray.txt"),
    ],
    ids=[
        "no-changelog",
        "no-license",
        "tools-in-library",
        "no-tools-marker",
        "no-tools-readme",
        "tests",
        "developers-guide",
        "outside",
    ],
)
def test_a_broken_sdist_is_named(dist: Distribution, broken: Edit, problem: str) -> None:
    names = broken(set(a_good_sdist(dist)))
    assert problem in sdist_problems(dist, names, VERSION)


# ---- `make check-lowest`: the floors are what its tests ran -------------------------------------


def test_floors_installed_as_published_pass() -> None:
    requires = ["pydantic>=2.6", "boto3>=1.34; extra == 'boto3'", "lambda-inbox==0.1.0", "x"]
    assert floor_problems(requires, {"pydantic": "2.6.0", "boto3": "1.34"}) == []


@pytest.mark.parametrize(
    ("installed", "problem"),
    [
        ({"pydantic": "2.7.1"}, "pydantic>=2.6: 2.7.1 installed, not the floor 2.6"),
        ({}, "pydantic>=2.6: not installed"),
    ],
    ids=["raised-by-another", "missing"],
)
def test_a_floor_the_tests_did_not_run_is_named(installed: dict[str, str], problem: str) -> None:
    assert floor_problems(["pydantic>=2.6"], installed) == [problem]
