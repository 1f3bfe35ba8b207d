"""The command line run in-process, for every test of tools/cli."""

from __future__ import annotations

import pytest

from tests.cli_support import Cli


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys)
