"""kafka-replay's pieces that need no service: reading invocation records, and the MSK IAM
sign-in (AWS's signer makes its token locally from the credentials, so it runs offline)."""

from __future__ import annotations

import base64
import json
import time
import urllib.parse

import pytest

from lambda_inbox_tools.kafka_replay import NotAFailureRecord, failed_batches
from lambda_inbox_tools.kafka_replay.cluster import ClusterError, client_config
from lambda_inbox_tools.testing.events import kafka_event, kafka_record


def test_an_sqs_invocation_record_names_offsets_only() -> None:
    document = {
        "requestContext": {"condition": "RetryAttemptsExhausted"},
        "KafkaBatchInfo": {
            "topic": "payments",
            "partition": 3,
            "firstOffset": 10,
            "lastOffset": 19,
        },
    }
    (batch,) = failed_batches(document, "test")
    assert (batch.topic, batch.partition, batch.first, batch.last) == ("payments", 3, 10, 19)
    assert batch.records is None and batch.condition == "RetryAttemptsExhausted"
    assert batch.label == "payments-3 offsets 10..19"


def test_an_s3_invocation_record_carries_its_records_per_partition() -> None:
    event = kafka_event(
        [kafka_record(0, 5, {"a": 1}), kafka_record(0, 6, {"a": 2}), kafka_record(1, 9, {"a": 3})]
    )
    document = {"KafkaBatchInfo": {"topic": "payments"}, "payload": json.dumps(event)}
    batches = sorted(failed_batches(document, "s3"), key=lambda b: b.partition)
    assert [(b.partition, b.first, b.last, len(b.records or [])) for b in batches] == [
        (0, 5, 6, 2),
        (1, 9, 9, 1),
    ]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ([], "not a JSON object"),
        ({"requestContext": {}}, "no KafkaBatchInfo"),
        ({"KafkaBatchInfo": {"topic": "t"}}, "lacks"),
    ],
)
def test_what_is_no_invocation_record_says_why(document: object, reason: str) -> None:
    with pytest.raises(NotAFailureRecord, match=reason):
        failed_batches(document, "origin")


def test_msk_iam_signs_in_with_a_token_from_aws_signer() -> None:
    config = client_config("b-1.example:9098", "msk-iam", "us-east-1")
    assert (config["security.protocol"], config["sasl.mechanism"]) == ("SASL_SSL", "OAUTHBEARER")
    token, expires = config["oauth_cb"](None)
    padded = token + "=" * (-len(token) % 4)
    url = urllib.parse.urlsplit(base64.urlsafe_b64decode(padded).decode())
    query = urllib.parse.parse_qs(url.query)
    assert url.netloc == "kafka.us-east-1.amazonaws.com"
    assert query["Action"] == ["kafka-cluster:Connect"]
    assert query["X-Amz-Credential"][0].startswith("testing/")
    assert time.time() < expires < time.time() + 3600


def test_plain_clusters_need_no_sign_in_and_msk_iam_needs_a_region() -> None:
    config = client_config("127.0.0.1:9092", "none", None)
    assert "security.protocol" not in config and config["enable.auto.commit"] is False
    with pytest.raises(ClusterError, match="needs a region"):
        client_config("b-1.example:9098", "msk-iam", None)
