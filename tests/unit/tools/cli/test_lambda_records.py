"""Stream records rebuilt as Lambda delivers them carry the stream's own region and account, read
from its ARN: a record replayed from another region says so (the local stack's streams are in
the template's region, so its records are unchanged)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lambda_inbox_tools.lambda_records import (
    arn_region_and_account,
    lambda_kinesis_record,
    lambda_stream_record,
)

KINESIS_ARN = "arn:aws:kinesis:eu-west-1:111122223333:stream/payments"
STREAM_ARN = (
    "arn:aws:dynamodb:ap-southeast-2:444455556666:table/Domain/stream/2026-11-26T00:00:00.000"
)


def test_a_kinesis_record_carries_the_streams_region_and_account() -> None:
    raw = {
        "SequenceNumber": "4959",
        "PartitionKey": "p-1",
        "Data": b'{"a": 1}',
        "ApproximateArrivalTimestamp": datetime(2026, 11, 26, tzinfo=UTC),
    }
    record = lambda_kinesis_record(raw, "shardId-000000000000", KINESIS_ARN, "replay")
    assert record["awsRegion"] == "eu-west-1"
    assert record["invokeIdentityArn"] == "arn:aws:iam::111122223333:role/replay-role"
    assert record["eventSourceARN"] == KINESIS_ARN
    assert record["eventID"] == "shardId-000000000000:4959"
    assert record["kinesis"]["data"] == "eyJhIjogMX0="


def test_a_dynamodb_stream_record_carries_the_streams_region() -> None:
    raw = {
        "eventID": "e-1",
        "eventName": "INSERT",
        "dynamodb": {
            "Keys": {"pk": {"S": "a"}},
            "ApproximateCreationDateTime": datetime(2026, 11, 26, tzinfo=UTC),
            "SequenceNumber": "100",
        },
    }
    record = lambda_stream_record(raw, STREAM_ARN)
    assert record["awsRegion"] == "ap-southeast-2"
    assert record["eventSourceARN"] == STREAM_ARN
    assert record["dynamodb"]["ApproximateCreationDateTime"] == 1795651200


@pytest.mark.parametrize("text", ["", "payments", "arn:aws:kinesis", "urn:a:b:c:d:e"])
def test_a_text_that_is_no_arn_names_no_region_or_account(text: str) -> None:
    assert arn_region_and_account(text) == ("", "")
