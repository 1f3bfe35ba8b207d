"""The command line as a person reads it: every command's help names its values (`NAME`, `URL`,
nothing for a flag), never a Python type (`<bool>`, `<str>`) or a braced usage (`{CONSUMER}`);
a command that does not exist points at `show`; a `show` that finds nothing says whether the
consumer has open records, and takes the key as a scan shows it (`consumer#key`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

import lambda_inbox_tools.cli.app  # noqa: F401  (importing the app declares its commands)
from lambda_inbox.store import InboxRecord, Status
from lambda_inbox_tools.cli.common import command
from tests.cli_support import Cli

PYTHON_TYPES = re.compile(r"<(bool|str|int|float|path|list[^>]*)>|\{[A-Z_]+\}")
TABLE = ("--table", "inbox", "--region", "us-east-1")
SINCE = "2026-01-01T00:00:00.000+00:00"


@pytest.fixture
def inbox(cli: Cli) -> Iterator[None]:
    with mock_aws():
        assert cli("create-table", *TABLE).code == 0
        yield


@pytest.mark.parametrize("name", [None, *sorted(command.names())])
def test_no_help_shows_a_python_type(cli: Cli, name: str | None) -> None:
    run = cli(*([name] if name else []), "--help")
    assert run.code == 0, run.err
    assert not PYTHON_TYPES.findall(run.out), run.out


def test_the_check_catches_what_typer_0_27_prints() -> None:
    """Typer 0.27 and later print these (tools/pyproject.toml holds typer below it)."""
    printed = "Usage: lambda-inbox show [OPTIONS] {CONSUMER} {KEY}\n│ --json  <bool>  One JSON"
    assert len(PYTHON_TYPES.findall(printed)) == 3
    assert len(PYTHON_TYPES.findall("│ *  CONSUMER  <str>  Consumer name")) == 1


def test_an_unknown_command_points_at_show(cli: Cli) -> None:
    run = cli("look", "orders", "evt-1")
    assert run.code == 2
    assert "No such command 'look'" in run.err
    assert "lambda-inbox show CONSUMER KEY" in run.err


def _put(record: InboxRecord) -> None:
    boto3.client("dynamodb", region_name="us-east-1").put_item(
        TableName="inbox", Item=record.to_item()
    )


def test_show_takes_the_key_as_a_scan_shows_it(cli: Cli, inbox: None) -> None:
    _put(InboxRecord(consumer="orders", message_key="evt-1", status=Status.COMPLETED))
    run = cli("show", "orders", "orders#evt-1", *TABLE)
    assert run.code == 0, run.err
    assert "COMPLETED" in run.out


def test_a_miss_says_whether_the_consumer_has_open_records(cli: Cli, inbox: None) -> None:
    run = cli("show", "ordres", "evt-1", *TABLE)
    assert run.code == 1
    assert "'ordres' has no open records either" in run.err
    assert "lambda-inbox stats" in run.err
    _put(InboxRecord("orders", "evt-2", Status.FAILED, failed_at=SINCE, open_since=SINCE))
    run = cli("show", "orders", "evt-9", *TABLE)
    assert run.code == 1
    assert "'orders' has 1 failed and 0 in progress" in run.err
    assert "lambda-inbox failed --consumer orders" in run.err
