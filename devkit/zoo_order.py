"""Zoo consumers whose result depends on order (devkit.zoo): each keeps a high-water mark, the
highest event number it applied, and takes any message at or below it for one already applied,
in one transaction with its effect. Sound where AWS keeps the order the mark relies on; broken
where it does not, or where the consumer breaks it itself (a message skipped as "already
applied" is lost). The check plays AWS's order (tools/lambda_inbox_tools/testing/check/lanes.py,
queues.py): each FIFO group, Kafka partition, Kinesis shard (partition key under
`ParallelizationFactor`) and DynamoDB stream (item) in order, and nothing across them.

The events are numbered in the order they were produced (`E-<n>`, devkit.zoo.records): across
groups, partitions and shards too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any, Literal

from botocore.exceptions import ClientError

from lambda_inbox_tools.testing import payload

from .zoo_ledger import RUN, Ledger, cancelled_by_condition
from .zoo_mapping import REPORT_FAILURES, Deployed, deployed

Handler = Callable[[dict[str, Any], Any], Any]
#: What one mark covers: a group, partition or partition key (an item of a table); a shard; all.
Scope = Literal["key", "shard", "all"]
#: The `ParallelizationFactor` of the templates that play one.
PARALLEL = {"ParallelizationFactor": 2}


def _lane(record: dict[str, Any], scope: Scope) -> str:
    """The order `scope` of a record, as the consumer reads it from the record."""
    if scope == "all":
        return "all"
    if "messageId" in record:
        return str((record.get("attributes") or {}).get("MessageGroupId", "queue"))
    if "kinesis" in record:
        shard = str(record["eventID"]).split(":", 1)[0]
        return shard if scope == "shard" else f"{shard}#{record['kinesis']['partitionKey']}"
    if "dynamodb" in record:
        stream = str(record["eventSourceARN"])
        keys = json.dumps(record["dynamodb"]["Keys"], sort_keys=True)
        return stream if scope == "shard" else f"{stream}#{keys}"
    return f"{record['topic']}-{record['partition']}"


def _records(event: dict[str, Any], scope: Scope) -> Iterator[tuple[Any, str, dict[str, Any]]]:
    """(itemIdentifier, lane, message) of every record, in the event's order."""
    if "Records" in event:
        for record in event["Records"]:
            if "messageId" in record:
                identifier = record["messageId"]
            elif "kinesis" in record:
                identifier = record["kinesis"]["sequenceNumber"]
            else:
                identifier = record["dynamodb"]["SequenceNumber"]
            yield identifier, _lane(record, scope), payload(record)
        return
    for tp, records in event["records"].items():
        for record in records:
            message = json.loads(base64.b64decode(record["value"]))
            identifier = {"topic-partition": tp, "offset": record["offset"]}
            yield identifier, _lane(record, scope), message


def high_water_mark(scope: Scope, *, goes_on: bool) -> Callable[[Ledger], Handler]:
    """A consumer that applies a message when its number is above its lane's mark (`scope`),
    raising the mark in the same transaction; a failed write is reported, and so is every
    message after it unless it `goes_on`."""

    def consumer(ledger: Ledger) -> Handler:
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            failed: list[dict[str, Any]] = []
            for identifier, lane, message in _records(event, scope):
                if failed and not goes_on:
                    failed.append({"itemIdentifier": identifier})
                    continue
                event_id = str(message["event_id"])
                number = {":n": {"N": event_id.removeprefix("E-")}}
                mark = {
                    "TableName": ledger.table,
                    "Key": {"pk": {"S": RUN}, "sk": {"S": f"MARK#{lane}"}},
                    "UpdateExpression": "SET seq = :n",
                    "ConditionExpression": "attribute_not_exists(seq) OR seq < :n",
                    "ExpressionAttributeValues": number,
                }
                actions = [{"Update": mark}, {"Update": ledger.effect(event_id)}]
                try:
                    ledger.dynamodb.transact_write_items(TransactItems=actions)
                except ClientError as error:
                    if not cancelled_by_condition(error):  # at or below the mark: applied
                        failed.append({"itemIdentifier": identifier})
            return {"batchItemFailures": failed}

        return handler

    return consumer


#: Broken: reports a failed message and goes on with the later ones of its group, partition or
#: key, which raise the mark past it: when it comes again, it is skipped.
goes_on_past_a_failure = high_water_mark("key", goes_on=True)
#: Broken: one mark for every group, partition and shard, as if the source kept one order.
one_mark_across_groups = high_water_mark("all", goes_on=False)


def mark_per_key(ledger: Ledger) -> Deployed:
    """A mark per group, partition, partition key or item, stopping at a failure, deployed with
    `ParallelizationFactor: 2` (the control)."""
    handler = high_water_mark("key", goes_on=False)(ledger)
    return deployed(handler, **PARALLEL, **REPORT_FAILURES)


def mark_per_shard_in_parallel(ledger: Ledger) -> Deployed:
    """A mark per shard, deployed with `ParallelizationFactor: 2`: Lambda keeps each partition
    key's order, not the shard's."""
    handler = high_water_mark("shard", goes_on=False)(ledger)
    return deployed(handler, **PARALLEL, **REPORT_FAILURES)


def mark_per_shard(ledger: Ledger) -> Deployed:
    """The same code deployed without `ParallelizationFactor` (the control)."""
    return deployed(high_water_mark("shard", goes_on=False)(ledger), **REPORT_FAILURES)
