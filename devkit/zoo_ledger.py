"""The zoo's ledger (devkit.zoo): one table on devkit's in-memory DynamoDB (or DynamoDB Local)
behind a plain botocore client, where each consumer's effect is one `ADD applied :1` on the
item `EFFECT#{event_id}` and its inbox record is the item `INBOX#{key}` (the library's inbox
table beside it, `inbox`, for the zoo's consumers built on `InboxConsumer`); and what the zoo's
consumers share to read an event."""

from __future__ import annotations

import base64
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from lambda_inbox_tools.testing import payload, record_id

from .memory_aws import MemoryAws
from .tables import create_domain_table, create_inbox_table

RUN = "RUN"
OK: dict[str, Any] = {"batchItemFailures": []}

#: One in-memory DynamoDB and client for the process (see `Ledger.in_memory`).
_SHARED: dict[str, Any] = {}


@dataclass
class Ledger:
    dynamodb: Any
    table: str = "ledger"
    #: The library's inbox table (`InboxConsumer`'s), in the in-memory ledger only.
    inbox: str = "inbox"
    #: The clock the consumer stamps its records' expiry on (the check's, in `zoo.run`).
    clock: Callable[[], float] = time.time

    @classmethod
    def in_memory(cls) -> Ledger:
        """An empty ledger. One client serves every run of the process: making a botocore
        client costs more than a run of the check."""
        if not _SHARED:
            memory = MemoryAws()
            client = memory.botocore_client("dynamodb")
            create_ledger_table(client, "ledger")
            create_inbox_table(client, "inbox")
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

    def commit(self, event_id: str, key: str | None = None) -> bool:
        """The inbox record of `key` (the event id unless given) and the effect in one
        transaction: False when the record exists (a duplicate); any other failure raised."""
        actions = [{"Put": self.mark(key or event_id)}, {"Update": self.effect(event_id)}]
        try:
            self.dynamodb.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if not cancelled_by_condition(error):
                raise
            return False
        return True

    def marked(self, key: str, *, consistent: bool = True) -> bool:
        answer = self.dynamodb.get_item(
            TableName=self.table,
            Key={"pk": {"S": RUN}, "sk": {"S": f"INBOX#{key}"}},
            ConsistentRead=consistent,
        )
        return "Item" in answer


def create_ledger_table(client: Any, name: str) -> None:
    """The ledger's table: the domain table's keys, TTL on `expires_at`."""
    create_domain_table(client, name)
    client.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
    )


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


def cancelled_by_condition(error: ClientError) -> bool:
    reasons = error.response.get("CancellationReasons") or []
    code = error.response.get("Error", {}).get("Code")
    if code == "ConditionalCheckFailedException":
        return True
    return code == "TransactionCanceledException" and any(
        r.get("Code") == "ConditionalCheckFailed" for r in reasons
    )
