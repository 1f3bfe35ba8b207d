"""The `lambda-inbox` console script against a moto inbox table."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from devkit.events import inbound_message
from lambda_inbox.cli import main
from lambda_inbox.config import InboxConfig
from lambda_inbox.store import InboxStore

TABLE = "cli-inbox"


@pytest.fixture
def store() -> Iterator[InboxStore]:
    with mock_aws():
        assert main(["create-table", "--table", TABLE]) == 0
        config = InboxConfig(consumer="order-events", inbox_table=TABLE)
        yield InboxStore(boto3.client("dynamodb"), config)


def _failed(store: InboxStore, key: str) -> None:
    message = inbound_message(b'{"a": 1}', delivery_id="m-1", source="queue")
    assert store.mark_failed(
        message, key, "digest", error_code="invalid_payload", error="bad", now=1.7e9
    )


def test_show_prints_the_stored_record(
    store: InboxStore, capsys: pytest.CaptureFixture[str]
) -> None:
    _failed(store, "evt-1")
    assert main(["show", "--table", TABLE, "--consumer", "order-events", "evt-1"]) == 0
    out = capsys.readouterr().out
    assert '"status": "FAILED"' in out
    assert '"payload_snapshot": "{\\"a\\": 1}"' in out


def test_show_of_an_unknown_key_fails_clearly(
    store: InboxStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "--table", TABLE, "--consumer", "order-events", "nope"]) == 1
    assert "no record 'order-events#nope'" in capsys.readouterr().err


def test_failed_lists_failed_records_of_the_consumer_only(
    store: InboxStore, capsys: pytest.CaptureFixture[str]
) -> None:
    _failed(store, "evt-1")
    other = InboxStore(store._client, InboxConfig(consumer="payment-events", inbox_table=TABLE))
    _failed(other, "evt-2")
    assert main(["failed", "--table", TABLE, "--consumer", "order-events"]) == 0
    out = capsys.readouterr().out
    assert "evt-1" in out and "invalid_payload" in out
    assert "evt-2" not in out
