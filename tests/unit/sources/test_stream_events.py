"""The Kinesis and DynamoDB Streams adapters (lambda_inbox._sources.streams): records to messages, what
cannot be read becomes poison and never an exception, the partial batch response names the first
record to redeliver, and a sequence number seen before marks a redelivery (moto for the consumer
tests)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from decimal import Decimal
from types import ModuleType
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.paths import FUNCTIONS_DIR, REPO_ROOT
from devkit.payloads import payment
from lambda_inbox import InboxError, MessageResult, Outcome, PoisonMessage
from lambda_inbox._sources import DynamoDBStreamsSource, KinesisSource
from lambda_inbox._sources.identity import fingerprint
from lambda_inbox._sources.kinesis import parse_kinesis_event
from lambda_inbox._sources.streams import parse_dynamodb_stream_event, stream_response
from lambda_inbox_tools.testing import (
    dynamodb_stream_event,
    dynamodb_stream_record,
    kinesis_event,
    kinesis_record,
)
from lambda_inbox_tools.testing.stream_events import sequence_number
from lambda_inbox_tools.testing.values import avro_value

AVSC = FUNCTIONS_DIR / "payment_events" / "schemas" / "payment_captured.avsc"


def test_kinesis_data_that_is_not_base64_is_poison_with_its_text_kept() -> None:
    record = kinesis_record(0, {"a": 1})
    record["kinesis"]["data"] = "not base64!"
    (message,) = parse_kinesis_event(kinesis_event([record]))
    assert message.decode_error == "data is not valid base64"
    assert message.body == b"not base64!"
    with pytest.raises(PoisonMessage):
        _ = message.text


@pytest.mark.parametrize(
    "break_it",
    [
        lambda r: r["kinesis"].pop("sequenceNumber"),
        lambda r: r["kinesis"].update(sequenceNumber=""),
        lambda r: r.pop("kinesis"),
    ],
)
def test_a_kinesis_record_no_response_could_name_fails_the_invocation(break_it: Any) -> None:
    record = kinesis_record(0, {"a": 1})
    break_it(record)
    with pytest.raises(InboxError, match="Kinesis record 0"):
        parse_kinesis_event({"Records": [record]})


def test_a_stream_record_without_a_sequence_number_fails_the_invocation() -> None:
    record = dynamodb_stream_record(0, {"pk": "a"}, new_image={"pk": "a"})
    del record["dynamodb"]["SequenceNumber"]
    with pytest.raises(InboxError, match="DynamoDB stream record 0 has no sequence number"):
        parse_dynamodb_stream_event({"Records": [record]})


def test_a_sequence_number_seen_before_in_its_shard_is_a_redelivery() -> None:
    source = KinesisSource()
    first = kinesis_event(kinesis_record(n, {"n": n}) for n in range(3))
    other_shard = kinesis_event(
        kinesis_record(n, {"n": n}, shard_id="shardId-000000000001") for n in range(2)
    )
    assert [m.redelivered for m in source.messages(first)] == [False] * 3
    assert [m.redelivered for m in source.messages(other_shard)] == [False] * 2
    later = kinesis_event(kinesis_record(n, {"n": n}) for n in range(2, 5))  # from seq 2 on
    assert [m.redelivered for m in source.messages(later)] == [True, False, False]


def test_the_response_names_the_first_record_to_redeliver_per_shard() -> None:
    records = [kinesis_record(n, {"n": n}) for n in range(4)] + [
        kinesis_record(n, {"n": n}, shard_id="shardId-000000000009") for n in range(7, 9)
    ]
    messages = parse_kinesis_event({"Records": records})
    outcomes = [
        Outcome.COMMITTED,
        Outcome.DEAD_LETTERED,  # poison does not block
        Outcome.FAILED,
        Outcome.SKIPPED,
        Outcome.SKIPPED,
        Outcome.FAILED,
    ]
    results = [MessageResult(m, o) for m, o in zip(messages, outcomes, strict=True)]
    assert stream_response(results) == {
        "batchItemFailures": [
            {"itemIdentifier": sequence_number(2)},
            {"itemIdentifier": sequence_number(7)},
        ]
    }
    done = [MessageResult(m, Outcome.COMMITTED) for m in messages]
    assert stream_response(done) == {"batchItemFailures": []}


def test_a_stream_document_has_plain_values_and_a_stable_fingerprint() -> None:
    record = dynamodb_stream_record(
        4,
        {"pk": "o-1", "n": 7},
        new_image={"pk": "o-1", "n": 7, "tags": {"z", "a", "m"}, "raw": b"\x00\x01", "p": None},
        old_image={"pk": "o-1", "n": Decimal("7.5")},
    )
    (message,) = parse_dynamodb_stream_event(dynamodb_stream_event([record]))
    assert message.json == {
        "eventName": "MODIFY",
        "Keys": {"pk": "o-1", "n": 7},
        "NewImage": {"pk": "o-1", "n": 7, "tags": {"z", "a", "m"}, "raw": b"\x00\x01", "p": None},
        "OldImage": {"pk": "o-1", "n": Decimal("7.5")},
        "userIdentity": None,
    }
    # The set's order does not depend on the interpreter's hash seed.
    program = (
        "import json, sys; from lambda_inbox._sources.streams import parse_dynamodb_stream_event; "
        "from lambda_inbox._sources.identity import fingerprint; "
        "print(fingerprint(parse_dynamodb_stream_event(json.load(sys.stdin))[0]))"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", program],
            input=__import__("json").dumps(dynamodb_stream_event([record])),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": _library_path()},
        ).stdout.strip()
        for seed in ("1", "2", "3")
    }
    assert digests == {fingerprint(message)}


def _library_path() -> str:
    return os.pathsep.join([str(REPO_ROOT / "layers" / "inbox"), os.environ.get("PYTHONPATH", "")])


def test_a_remove_has_no_new_image_and_a_broken_image_is_poison() -> None:
    remove = dynamodb_stream_record(0, {"pk": "a"}, old_image={"pk": "a", "v": 1})
    broken = dynamodb_stream_record(1, {"pk": "b"}, new_image={"pk": "b"})
    broken["dynamodb"]["NewImage"] = {"pk": {"S": "b"}, "v": {"X": "?"}}
    listed = dynamodb_stream_record(2, {"pk": "c"}, new_image={"pk": "c"})
    listed["dynamodb"]["NewImage"] = ["not", "a", "map"]
    first, second, third = parse_dynamodb_stream_event(
        dynamodb_stream_event([remove, broken, listed])
    )
    assert first.json["eventName"] == "REMOVE" and first.json["NewImage"] is None
    for poison in (second, third):
        with pytest.raises(PoisonMessage, match="NewImage is not DynamoDB JSON"):
            _ = poison.json


def test_detection_tells_kinesis_dynamodb_streams_and_a_mixture_apart() -> None:
    kinesis = kinesis_event([kinesis_record(0, {"a": 1})])
    streams = dynamodb_stream_event([dynamodb_stream_record(0, {"pk": "a"}, new_image={})])
    mixed = {"Records": kinesis["Records"] + streams["Records"]}
    assert KinesisSource().matches(kinesis) and not KinesisSource().matches(streams)
    assert DynamoDBStreamsSource().matches(streams) and not DynamoDBStreamsSource().matches(kinesis)
    assert not KinesisSource().matches(mixed) and not DynamoDBStreamsSource().matches(mixed)


def test_kinesis_data_in_avro_is_read_through_value_formats(
    aws: AppState, payment_events: ModuleType
) -> None:
    """The payment consumer's formats read Kinesis data as they read Kafka values: the same
    payment in JSON and in Avro is one payment."""
    consumer = aws.consumer(
        "payments-from-kinesis",
        model=payment_events.PaymentCaptured,
        decide=lambda event, uow: None,
        key="event_id",
        config={"value_formats": payment_events.VALUE_FORMATS},
    )
    body = payment(1, "cust-k", 990)
    event = kinesis_event(
        [kinesis_record(0, body), kinesis_record(1, avro_value(AVSC, body, schema_id=3))]
    )
    results = consumer.process(parse_kinesis_event(event, payment_events.VALUE_FORMATS))
    assert [r.outcome for r in results] == [Outcome.COMMITTED, Outcome.DUPLICATE]


def test_the_kits_stream_records_keep_the_samples_shapes() -> None:
    from devkit.aws_documents import aws_document, shape_problems

    kinesis = kinesis_event([kinesis_record(0, {"a": 1})])
    assert shape_problems(aws_document("kinesis-event.json"), kinesis) == []
    built = dynamodb_stream_record(0, {"Id": 101}, new_image={"Message": "New item!", "Id": 101})
    sample = copy.deepcopy(aws_document("dynamodb-streams-event.json"))
    sample["Records"] = sample["Records"][:1]
    assert shape_problems(sample, dynamodb_stream_event([built])) == []


def test_an_sqs_message_carrying_a_stream_record_is_read_as_the_stream_consumer_reads_it() -> None:
    from lambda_inbox._sources.sqs import parse_sqs_event
    from lambda_inbox_tools.testing import sqs_event, sqs_record
    from lambda_inbox_tools.testing.events import string_attribute

    record = dynamodb_stream_record(3, {"pk": "a"}, new_image={"pk": "a", "n": 2})
    attributes = {
        "dynamodb-stream-event-id": string_attribute(record["eventID"]),
        "idempotency-key": string_attribute("k"),
    }
    body = __import__("json").dumps(record)
    replayed, broken = parse_sqs_event(
        sqs_event(
            sqs_record(body, message_attributes=attributes),
            sqs_record("not a record", message_attributes=attributes),
        )
    )
    assert replayed.json == {
        "eventName": "INSERT",
        "Keys": {"pk": "a"},
        "NewImage": {"pk": "a", "n": 2},
        "OldImage": None,
        "userIdentity": None,
    }
    assert replayed.redelivered  # sent again by an operator: read first
    with pytest.raises(PoisonMessage, match="not a DynamoDB stream record's JSON"):
        _ = broken.json
