"""Aggregated Kinesis records (the Kinesis Producer Library's format) through
`InboxConsumer.handle` on DynamoDB Local: N user records commit once each across a failure in
the middle and Lambda's retry from the parent's sequence number; a consumer keyed by default
(delivery id `"<eventID>/<index>"`) and one keyed by business key both hold."""

from __future__ import annotations

from typing import Any

import pytest

from devkit.app_state import AppState
from lambda_inbox import InboxConsumer, UnitOfWork
from lambda_inbox_tools.testing import (
    aggregated_kinesis_record,
    event_after,
    failed_sequence_numbers,
    kinesis_event,
    kinesis_record,
)
from lambda_inbox_tools.testing.stream_events import sequence_number

pytestmark = pytest.mark.integration

USERS = 7


def counter(aws: AppState, fail_once: set[int], key: str | None) -> InboxConsumer[Any]:
    """Each user record adds to its own counter item; `fail_once`: records whose first
    decision raises (a transient failure in the middle of the aggregate)."""

    def count(record: dict[str, Any], uow: UnitOfWork) -> None:
        if record["n"] in fail_once:
            fail_once.discard(record["n"])
            raise RuntimeError(f"downstream hiccup on {record['n']}")
        uow.update(
            aws.domain,
            {"pk": f"COUNTER#{record['n']}", "sk": "C"},
            "ADD applied :one",
            values={":one": 1},
        )

    return aws.consumer("kpl", model=dict, decide=count, key=key)


def applied(aws: AppState) -> dict[int, int]:
    return {
        int(item["pk"].removeprefix("COUNTER#")): int(item["applied"])
        for item in aws.domain_items()
        if item["pk"].startswith("COUNTER#")
    }


@pytest.mark.parametrize("key", [None, "event_id"])
def test_n_user_records_commit_once_each_across_a_failure_in_the_middle_and_its_retry(
    aws: AppState, key: str | None
) -> None:
    consumer = counter(aws, fail_once={3}, key=key)
    users = [(f"pk-{n % 2}", {"n": n, "event_id": f"e-{n}"}) for n in range(USERS)]
    event = kinesis_event(
        [
            kinesis_record(0, {"n": 100, "event_id": "e-100"}),
            aggregated_kinesis_record(1, users),
            kinesis_record(2, {"n": 101, "event_id": "e-101"}),
        ]
    )
    response = consumer.handle(event, None)
    # The failed user record's parent is named: Lambda retries the shard from it.
    assert failed_sequence_numbers(response) == [sequence_number(1)]
    before = applied(aws)
    assert before == {100: 1, 0: 1, 1: 1, 2: 1}  # the siblings before the failure committed
    again = event_after(event, response)
    assert again is not None and len(again["Records"]) == 2  # the aggregate and what follows
    assert consumer.handle(again, None) == {"batchItemFailures": []}
    # Every user record once: the siblings committed before the failure were duplicates.
    assert applied(aws) == {n: 1 for n in [*range(USERS), 100, 101]}
    keys = set(aws.inbox_records("kpl"))
    if key is None:
        parent = event["Records"][1]["eventID"]
        assert {f"{parent}/{n}" for n in range(USERS)} <= keys
    else:
        assert {f"e-{n}" for n in range(USERS)} <= keys
    # Delivered whole once more (a timeout after the commit): nothing applies twice.
    assert consumer.handle(event, None) == {"batchItemFailures": []}
    assert applied(aws) == {n: 1 for n in [*range(USERS), 100, 101]}
