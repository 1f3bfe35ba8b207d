"""A producer's retry as the check sends it (`testing.check.sources.retries`): the same event serialized
again, never byte for byte, with the app's volatile fields stamped anew."""

from __future__ import annotations

import base64
import hashlib
import json
import random

import pytest

from lambda_inbox_tools.testing import kafka_record, kinesis_record, sqs_record
from lambda_inbox_tools.testing.check.sources.retries import restamped, retried

EVENT = {"event_id": "E-1", "amount": 5, "meta": {"sent_at": "2024-11-21T12:02:00Z", "n": 7}}


@pytest.mark.parametrize("seed", range(10))
def test_an_sqs_body_is_sent_again_as_other_bytes_of_the_same_event(seed: int) -> None:
    record = sqs_record(EVENT)
    again = retried(record, random.Random(seed), ["meta.sent_at"])
    assert again["body"] != record["body"]
    assert again["md5OfBody"] == hashlib.md5(again["body"].encode()).hexdigest()
    assert json.loads(again["body"]) == {
        **EVENT,
        "meta": {"sent_at": "2024-11-21T12:02:01Z", "n": 7},
    }


def test_key_orders_and_spacings_vary_over_retries() -> None:
    bodies = {retried(sqs_record(EVENT), random.Random(seed), [])["body"] for seed in range(20)}
    assert len(bodies) > 4
    assert len({tuple(json.loads(body)) for body in bodies}) > 1  # key orders


def test_a_one_key_event_is_still_other_bytes() -> None:
    record = sqs_record({"a": 1})
    assert all(
        retried(record, random.Random(seed), [])["body"] != record["body"] for seed in range(10)
    )


def test_kafka_values_and_kinesis_data_are_sent_again_too() -> None:
    kafka = kafka_record(0, 3, EVENT)
    value = base64.b64decode(retried(kafka, random.Random(1), ["amount"])["value"])
    assert value != base64.b64decode(kafka["value"]) and json.loads(value)["amount"] == 6
    kinesis = kinesis_record(0, EVENT)
    data = base64.b64decode(retried(kinesis, random.Random(1), [])["kinesis"]["data"])
    assert data != base64.b64decode(kinesis["kinesis"]["data"]) and json.loads(data) == EVENT


def test_what_is_not_a_json_object_goes_again_unchanged() -> None:
    for record in (sqs_record("plain text"), sqs_record("[1, 2]"), kafka_record(0, 1, b"\x00\x01")):
        assert retried(record, random.Random(0), ["sent_at"]) == record


def test_volatile_fields_are_stamped_by_kind_and_missing_ones_left_alone() -> None:
    event = {"at": "2024-11-21T12:02:00+00:00", "n": 1, "x": 1.5, "id": "t-1", "ok": True}
    assert restamped(event, ["at", "n", "x", "id", "ok", "absent", "id.deeper"]) == {
        "at": "2024-11-21T12:02:01+00:00",
        "n": 2,
        "x": 2.5,
        "id": "t-1-retry",
        "ok": True,
    }
