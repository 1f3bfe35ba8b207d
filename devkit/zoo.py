"""Consumers that are not effectively-once, each in its own way, and one that is: what the
testing kit's effectively-once check must tell apart, for every seed and every source
(tests/integration/kit/test_broken_consumers.py, scripts/effectively_once_zoo.py).

Every consumer takes messages `{"event_id": ..., "points": ...}` from SQS (standard or FIFO),
Kafka, Kinesis (the data) or DynamoDB Streams (the new image), and its effect is one `ADD applied :1` on the item `EFFECT#{event_id}` of its ledger: a
message applied twice shows as 2. The ledger is devkit's in-memory DynamoDB behind a plain
botocore client (`MemoryAws.botocore_client`): every call goes through botocore whole, so the
check's faults fire on the consumer's writes as they would on DynamoDB's; what the zoo proves is
the check, single-threaded. (The example consumers are checked on DynamoDB Local.)
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from lambda_inbox_tools.testing import (
    NotEffectivelyOnce,
    Report,
    check_effectively_once,
    dynamodb_stream_record,
    kafka_record,
    kinesis_record,
    payload,
    record_id,
    sqs_record,
)

from .memory_aws import MemoryAws
from .tables import create_domain_table

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
RUN = "RUN"
OK: dict[str, Any] = {"batchItemFailures": []}
SOURCES = ("sqs", "fifo", "kafka", "kinesis", "dynamodb")


#: One in-memory DynamoDB and client for the process (see `Ledger.in_memory`).
_SHARED: dict[str, Any] = {}


@dataclass
class Ledger:
    dynamodb: Any
    table: str = "ledger"

    @classmethod
    def in_memory(cls) -> Ledger:
        """An empty ledger. One client serves every run of the process: making a botocore
        client costs more than a run of the check."""
        if not _SHARED:
            memory = MemoryAws()
            client = memory.botocore_client("dynamodb")
            create_domain_table(client, "ledger")
            _SHARED.update(memory=memory, client=client)
        _SHARED["memory"].clear_items()
        return cls(_SHARED["client"])

    def effects(self) -> Counter[str]:
        """event id -> how many times its effect was applied."""
        items = self.dynamodb.query(
            TableName=self.table,
            KeyConditionExpression="pk = :run",
            ExpressionAttributeValues={":run": {"S": RUN}},
        )["Items"]
        return Counter(
            {
                item["sk"]["S"].removeprefix("EFFECT#"): int(item["applied"]["N"])
                for item in items
                if item["sk"]["S"].startswith("EFFECT#")
            }
        )

    def effect(self, event_id: str) -> dict[str, Any]:
        """The effect as a transaction action (`Update`)."""
        return {
            "TableName": self.table,
            "Key": {"pk": {"S": RUN}, "sk": {"S": f"EFFECT#{event_id}"}},
            "UpdateExpression": "ADD applied :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }

    def apply(self, event_id: str) -> None:
        self.dynamodb.update_item(**self.effect(event_id))

    def mark(self, key: str, *, conditional: bool = True) -> dict[str, Any]:
        """The inbox record of `key` as a transaction action (`Put`)."""
        action: dict[str, Any] = {
            "TableName": self.table,
            "Item": {"pk": {"S": RUN}, "sk": {"S": f"INBOX#{key}"}},
        }
        if conditional:
            action["ConditionExpression"] = "attribute_not_exists(pk)"
        return action

    def marked(self, key: str) -> bool:
        answer = self.dynamodb.get_item(
            TableName=self.table,
            Key={"pk": {"S": RUN}, "sk": {"S": f"INBOX#{key}"}},
            ConsistentRead=True,
        )
        return "Item" in answer


def deliveries(event: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(delivery id, payload) of every record of an SQS, Kafka, Kinesis or DynamoDB Streams
    event, in delivery order."""
    if "Records" in event:
        return [(record_id(r), payload(r)) for r in event["Records"]]
    return [
        (f"{tp}@{r['offset']}", json.loads(base64.b64decode(r["value"])))
        for tp, records in event["records"].items()
        for r in records
    ]


def _cancelled_by_condition(error: ClientError) -> bool:
    reasons = error.response.get("CancellationReasons") or []
    code = error.response.get("Error", {}).get("Code")
    if code == "ConditionalCheckFailedException":
        return True
    return code == "TransactionCanceledException" and any(
        r.get("Code") == "ConditionalCheckFailed" for r in reasons
    )


# ---- the broken ones ----------------------------------------------------------------------------


def no_inbox(ledger: Ledger) -> Handler:
    """Applies every delivery."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for _, message in deliveries(event):
            ledger.apply(message["event_id"])
        return OK

    return handler


def effect_then_mark(ledger: Ledger) -> Handler:
    """Skips what is marked; applies, then marks (two writes)."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for _, message in deliveries(event):
            if not ledger.marked(message["event_id"]):
                ledger.apply(message["event_id"])
                ledger.dynamodb.put_item(**ledger.mark(message["event_id"], conditional=False))
        return OK

    return handler


def mark_then_effect(ledger: Ledger) -> Handler:
    """Marks (conditionally), then applies (two writes)."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for _, message in deliveries(event):
            try:
                ledger.dynamodb.put_item(**ledger.mark(message["event_id"]))
            except ClientError as error:
                if _cancelled_by_condition(error):
                    continue
                raise
            ledger.apply(message["event_id"])
        return OK

    return handler


def acknowledges_without_writing(ledger: Ledger) -> Handler:
    """A transactional inbox that swallows a write that failed and acknowledges the message."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for _, message in deliveries(event):
            actions = [
                {"Put": ledger.mark(message["event_id"])},
                {"Update": ledger.effect(message["event_id"])},
            ]
            try:
                ledger.dynamodb.transact_write_items(TransactItems=actions)
            except ClientError:  # a duplicate, or anything else: acknowledged all the same
                continue
        return OK

    return handler


def inbox_outside_the_transaction(ledger: Ledger) -> Handler:
    """The domain writes in one transaction, the inbox record in a write of its own."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for _, message in deliveries(event):
            if ledger.marked(message["event_id"]):
                continue
            points = {
                "TableName": ledger.table,
                "Key": {"pk": {"S": RUN}, "sk": {"S": "POINTS"}},
                "UpdateExpression": "ADD points :n",
                "ExpressionAttributeValues": {":n": {"N": str(message["points"])}},
            }
            ledger.dynamodb.transact_write_items(
                TransactItems=[{"Update": ledger.effect(message["event_id"])}, {"Update": points}]
            )
            ledger.dynamodb.put_item(**ledger.mark(message["event_id"], conditional=False))
        return OK

    return handler


def _transactional(ledger: Ledger, key: Callable[[str, dict[str, Any]], str]) -> Handler:
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for delivery_id, message in deliveries(event):
            actions = [
                {"Put": ledger.mark(key(delivery_id, message))},
                {"Update": ledger.effect(message["event_id"])},
            ]
            try:
                ledger.dynamodb.transact_write_items(TransactItems=actions)
            except ClientError as error:
                if not _cancelled_by_condition(error):
                    raise  # the invocation fails: the batch is delivered again
        return OK

    return handler


def keyed_by_delivery_id(ledger: Ledger) -> Handler:
    """A transactional inbox keyed by the delivery's id (SQS messageId, Kafka offset)."""
    return _transactional(ledger, lambda delivery_id, message: delivery_id)


def transactional_inbox(ledger: Ledger) -> Handler:
    """Effectively once: the inbox record, keyed by the event id, in the effect's transaction;
    a duplicate cancels it; any other failure fails the invocation."""
    return _transactional(ledger, lambda delivery_id, message: str(message["event_id"]))


BROKEN: dict[str, Callable[[Ledger], Handler]] = {
    "no inbox": no_inbox,
    "effect first, mark second": effect_then_mark,
    "mark first, effect second": mark_then_effect,
    "acknowledge without writing": acknowledges_without_writing,
    "inbox record outside the domain transaction": inbox_outside_the_transaction,
    "key includes the delivery id": keyed_by_delivery_id,
}


#: Sources on which a consumer of BROKEN is not broken, and why.
SOUND_ON: dict[str, dict[str, str]] = {
    "key includes the delivery id": {
        "dynamodb": (
            "a DynamoDB stream record's eventID is the same on every delivery of it, and no "
            "producer retry makes a new record of the same change (an item written again "
            "unchanged makes no stream record)"
        ),
    },
}


def records(source: str, count: int = 8) -> list[dict[str, Any]]:
    """`count` messages as `source` (one of SOURCES) delivers them: Kafka on 3 partitions,
    Kinesis on 2 shards."""
    bodies: list[dict[str, Any]] = [{"event_id": f"E-{n}", "points": n + 1} for n in range(count)]
    if source == "sqs":
        return [sqs_record(body) for body in bodies]
    if source == "fifo":
        return [
            sqs_record(b, group=f"G-{n % 3}", dedup=str(b["event_id"]))
            for n, b in enumerate(bodies)
        ]
    if source == "kinesis":
        return [
            kinesis_record(n, body, shard_id=f"shardId-00000000000{n % 2}")
            for n, body in enumerate(bodies)
        ]
    if source == "dynamodb":
        return [
            dynamodb_stream_record(n, {"pk": RUN, "sk": body["event_id"]}, new_image=body)
            for n, body in enumerate(bodies)
        ]
    return [kafka_record(n % 3, n // 3, body, topic="points") for n, body in enumerate(bodies)]


def check(consumer: Callable[[Ledger], Handler], source: str, seed: int) -> Report:
    """One run of the check on a fresh ledger (raises what the check raises)."""
    ledger = Ledger.in_memory()
    return check_effectively_once(
        consumer(ledger),
        records(source),
        effects=ledger.effects,
        key=lambda record: payload(record)["event_id"],
        clients=[ledger.dynamodb],
        seed=seed,
        batch_size=4,
    )


def verdict(consumer: Callable[[Ledger], Handler], source: str, seed: int) -> str | None:
    """What the check said of one run: None when it passed, else the first words of its
    finding ("lost", "applied twice", "unexpected", "messages still unacknowledged")."""
    try:
        check(consumer, source, seed)
    except NotEffectivelyOnce as finding:
        return str(finding).split(":", 1)[0]
    return None


def table(seeds: Iterable[int]) -> list[tuple[str, str, int, Counter[str]]]:
    """consumer x source: how many of `seeds` the check caught, and how it said so."""
    chosen = list(seeds)
    rows = []
    for name, consumer in BROKEN.items():
        for source in SOURCES:
            if source in SOUND_ON.get(name, {}):
                continue
            said = Counter(v for v in (verdict(consumer, source, s) for s in chosen) if v)
            rows.append((name, source, sum(said.values()), said))
    return rows
