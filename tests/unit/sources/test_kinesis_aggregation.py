"""Kinesis records aggregated by the Kinesis Producer Library (lambda_inbox._sources.aggregation):
each user record a message under `"<eventID>/<index>"` with its own partition key, reported by
its parent's sequence number; a bad aggregate poison with its bytes (moto for the consumer)."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from devkit.app_state import AppState
from lambda_inbox import MessageResult, Outcome, PoisonMessage
from lambda_inbox._sources.aggregation import BadAggregate, aggregated_record_class, deaggregate
from lambda_inbox._sources.fields import KPL_MAGIC
from lambda_inbox._sources.kinesis import parse_kinesis_event
from lambda_inbox._sources.streams import stream_response
from lambda_inbox_tools.testing import aggregated_kinesis_record, kinesis_event, kinesis_record
from lambda_inbox_tools.testing.stream_events import aggregated_data, sequence_number

USERS = [("acct-1", {"n": 0}), ("acct-2", {"n": 1}), ("acct-1", {"n": 2})]


def test_an_aggregate_is_one_message_per_user_record_under_its_parent() -> None:
    plain = kinesis_record(0, {"n": "plain"}, partition_key="p")
    parent = aggregated_kinesis_record(1, USERS)
    messages = parse_kinesis_event(kinesis_event([plain, parent]))
    assert [m.sequence for m in messages] == [0, 1, 2, 3]
    first, *users = messages
    assert first.json == {"n": "plain"}
    assert [m.json for m in users] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert [m.delivery_id for m in users] == [f"{parent['eventID']}/{i}" for i in range(3)]
    assert {m.item_identifier for m in users} == {sequence_number(1)}
    keys = [m.dead_letter_attributes["kinesis-partition-key"]["StringValue"] for m in users]
    assert keys == ["acct-1", "acct-2", "acct-1"]
    indexes = [m.dead_letter_attributes["kinesis-aggregate-index"]["StringValue"] for m in users]
    assert indexes == ["0", "1", "2"]


def test_a_failed_user_record_reports_its_parents_sequence_number() -> None:
    messages = parse_kinesis_event(kinesis_event([aggregated_kinesis_record(4, USERS)]))
    results = [
        MessageResult(messages[0], Outcome.COMMITTED),
        MessageResult(messages[1], Outcome.FAILED),
        MessageResult(messages[2], Outcome.SKIPPED),
    ]
    assert stream_response(results) == {
        "batchItemFailures": [{"itemIdentifier": sequence_number(4)}]
    }


def _with_digest(body: bytes) -> bytes:
    return KPL_MAGIC + body + hashlib.md5(body, usedforsecurity=False).digest()


def _bad_index() -> bytes:
    aggregate = aggregated_record_class()()
    aggregate.partition_key_table.append("k")
    aggregate.records.add(partition_key_index=3, data=b"{}")
    return _with_digest(aggregate.SerializeToString())


BAD = [
    (aggregated_data(USERS)[:-1] + b"\x00", "MD5 digest does not match"),
    (_with_digest(b"\xff\xff\xff"), "does not parse"),
    (_with_digest(b"\x1a\x02\x08\x00"), "does not parse"),  # a record without its data
    (_bad_index(), "names partition key 3 of a table of 1"),
    (KPL_MAGIC + b"\x00", "shorter than"),
]


@pytest.mark.parametrize(("data", "why"), BAD)
def test_a_bad_aggregate_is_refused_saying_why(data: bytes, why: str) -> None:
    with pytest.raises(BadAggregate, match=why):
        deaggregate(data).check_keys()


@pytest.mark.parametrize(("data", "why"), BAD)
def test_a_bad_aggregate_is_one_poison_message_with_its_bytes(data: bytes, why: str) -> None:
    (message,) = parse_kinesis_event(kinesis_event([kinesis_record(0, data)]))
    assert message.body == data
    with pytest.raises(PoisonMessage, match=why):
        _ = message.json


def test_a_consumer_dead_letters_a_bad_aggregate_with_its_bytes_and_goes_on(
    aws: AppState,
) -> None:
    applied: list[Any] = []
    consumer = aws.consumer("kpl", model=dict, decide=lambda d, u: applied.append(d))
    bad = kinesis_record(0, BAD[0][0], partition_key="acct-1")
    event = kinesis_event([bad, aggregated_kinesis_record(1, USERS)])
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    assert applied == [{"n": 0}, {"n": 1}, {"n": 2}]
    (dead,) = aws.dead_letters()
    assert base64.b64decode(dead["Body"]) == BAD[0][0]
    attributes = dead["MessageAttributes"]
    assert attributes["inbox-error-code"]["StringValue"] == "undecodable_body"
    assert attributes["kinesis-sequence-number"]["StringValue"] == sequence_number(0)


def test_a_kinesis_consumer_without_aggregated_records_loads_none_of_it() -> None:
    import json
    import subprocess
    import sys

    from devkit.paths import REPO_ROOT

    event = kinesis_event([kinesis_record(0, {"n": 1})])
    program = (
        "import json, sys; from lambda_inbox._sources.kinesis import parse_kinesis_event; "
        "parse_kinesis_event(json.load(sys.stdin)); "
        "print(sorted(m for m in sys.modules if m.endswith('aggregation') or 'protobuf' in m))"
    )
    out = subprocess.run(
        [sys.executable, "-c", program],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO_ROOT / "layers" / "inbox")},
    ).stdout.strip()
    assert out == "[]"
