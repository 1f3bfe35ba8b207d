"""`CreatesItem` on DynamoDB Local: what a batch costs and what races and lost answers do.

- 10 new messages of at most 1 KB: 10 `PutItem`, 10 WCU (DynamoDB Local's `ConsumedCapacity`),
  nothing written to the inbox table.
- The batch redelivered, then resent under new message ids: at most 10 WCU each (a failed
  conditional put is charged 1 WCU for an item of at most 1 KB: docs/CAPACITY.md), no read,
  every item byte for byte as it was.
- Another payload under an item's key: dead-lettered `fingerprint_mismatch`, the item unchanged.
- Two invocations handling one batch at the same time: each item written once, each message
  committed by one and a duplicate for the other.
- A put whose answer is lost after it landed: sent again, it finds its own item (a duplicate),
  and the item is written once.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError

from devkit.app_state import AppState
from devkit.events import sqs_event, sqs_record
from devkit.meters import RequestMeter, computed_wcu
from lambda_inbox import CreatesItem, InboxConsumer, MessageResult
from lambda_inbox.wire import parse_sqs_event

pytestmark = pytest.mark.integration


def shipment(body: dict[str, Any]) -> dict[str, Any]:
    return {"pk": f"ORDER#{body['order']}", "sk": "SHIPMENT", "note": body["note"]}


def consumer(aws: AppState) -> InboxConsumer[Any]:
    return aws.consumer("ship", model=dict, decide=CreatesItem(aws.domain, shipment))


def records(prefix: str, *, receive_count: int = 1, ids: str = "m") -> list[dict[str, Any]]:
    return [
        sqs_record(
            json.dumps({"order": f"{prefix}-{n}", "note": "n" * 700}),  # item under 1 KB
            message_id=f"{ids}-{prefix}-{n}",
            receive_count=receive_count,
        )
        for n in range(10)
    ]


def handle(inbox: InboxConsumer[Any], batch: list[dict[str, Any]]) -> list[MessageResult]:
    return inbox.process(parse_sqs_event(sqs_event(*batch)))


class Capacity:
    """Each request of the consumer's client, its computed WCU, and the WCU DynamoDB Local
    measured (`ReturnConsumedCapacity` added to every write: it reports none for a failed
    conditional put)."""

    def __init__(self, client: Any) -> None:
        self.meter = RequestMeter(client)
        self.measured = 0.0
        self._lock = threading.Lock()
        client.meta.events.register("before-parameter-build.dynamodb.PutItem", self._ask)
        client.meta.events.register("after-call.dynamodb.PutItem", self._count)

    @staticmethod
    def _ask(params: dict[str, Any], **_: Any) -> None:
        params["ReturnConsumedCapacity"] = "TOTAL"

    def _count(self, parsed: dict[str, Any], **_: Any) -> None:
        with self._lock:
            self.measured += float(parsed.get("ConsumedCapacity", {}).get("CapacityUnits", 0))

    def computed(self) -> float:
        return sum(computed_wcu(r.operation, r.params) for r in self.meter.requests)

    def clear(self) -> None:
        self.meter.clear()
        self.measured = 0.0


def test_ten_new_messages_cost_ten_wcu_and_a_redelivery_or_a_resend_changes_nothing(
    aws: AppState,
) -> None:
    inbox = consumer(aws)
    capacity = Capacity(inbox.dynamodb)
    results = handle(inbox, records("a"))
    assert {r.outcome.value for r in results} == {"committed"}
    assert capacity.meter.counts() == {"PutItem": 10}
    assert capacity.measured == 10.0  # DynamoDB Local's own count
    assert capacity.computed() == 10.0
    assert aws.scan(aws.inbox) == []
    stored = aws.scan(aws.domain)
    assert len(stored) == 10
    for label, again in (
        ("redelivered", records("a", receive_count=2)),
        ("resent", records("a", ids="resent")),
    ):
        capacity.clear()
        results = handle(inbox, again)
        assert {r.outcome.value for r in results} == {"duplicate"}, label
        assert capacity.meter.counts() == {"PutItem": 10}, label  # no read, no other write
        assert capacity.computed() <= 10.0, label
        assert aws.scan(aws.domain) == stored, label
        assert aws.scan(aws.inbox) == [], label


def test_another_payload_under_an_items_key_is_dead_lettered_and_the_item_unchanged(
    aws: AppState,
) -> None:
    inbox = consumer(aws)
    handle(inbox, records("c")[:1])
    before = aws.scan(aws.domain)
    other = sqs_record(json.dumps({"order": "c-0", "note": "changed"}))
    (result,) = handle(inbox, [other])
    assert (result.outcome.value, result.error_code) == ("dead_lettered", "fingerprint_mismatch")
    assert aws.scan(aws.domain) == before
    (letter,) = aws.sqs.receive_message(QueueUrl=aws.dlq_url, MaxNumberOfMessages=10)["Messages"]
    assert json.loads(letter["Body"])["note"] == "changed"


def test_two_invocations_of_one_batch_at_once_write_each_item_once(aws: AppState) -> None:
    first, second = consumer(aws), consumer(aws)
    batch = records("r")
    start = threading.Barrier(2)
    outcomes: dict[str, list[str]] = {}

    def run(name: str, inbox: InboxConsumer[Any]) -> None:
        start.wait()
        outcomes[name] = [r.outcome.value for r in handle(inbox, batch)]

    threads = [threading.Thread(target=run, args=(n, c)) for n, c in (("1", first), ("2", second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for one, two in zip(outcomes["1"], outcomes["2"], strict=True):
        assert sorted([one, two]) == ["committed", "duplicate"]
    assert len(aws.scan(aws.domain)) == 10
    assert aws.scan(aws.inbox) == []


def test_a_put_whose_answer_is_lost_is_sent_again_and_finds_its_own_item(aws: AppState) -> None:
    inbox = consumer(aws)
    lost = {"left": 1}

    def lose_the_answer(**_: Any) -> None:  # the put landed; its answer never arrives
        if lost["left"]:
            lost["left"] -= 1
            raise ReadTimeoutError(endpoint_url="dynamodb-local")

    inbox.dynamodb.meta.events.register("after-call.dynamodb.PutItem", lose_the_answer)
    meter = RequestMeter(inbox.dynamodb)
    (result,) = handle(inbox, records("t")[:1])
    assert result.outcome.value == "duplicate"  # its own item: applied once
    assert meter.counts() == {"PutItem": 2}
    (item,) = aws.scan(aws.domain)
    assert item["inbox_consumer"] == {"S": "ship"}
