"""Consumers that are not effectively-once, each in its own way, and one that is: what the
testing kit's effectively-once check must tell apart, for every seed and every source
(tests/integration/kit/test_broken_consumers.py, scripts/effectively_once_zoo.py).

Every consumer takes messages `{"event_id": ..., "points": ...}` from SQS (standard or FIFO),
Kafka, Kinesis (the data) or DynamoDB Streams (the new image), and its effect is one `ADD
applied :1` on the item `EFFECT#{event_id}` of its ledger: a message applied twice shows as 2.
The consumers of SNS notifications (devkit.zoo_sns) take them from a standard queue an SNS topic
feeds (source "sns") only (`ONLY_ON`). The ledger is devkit's in-memory DynamoDB behind a plain
botocore client (`MemoryAws.botocore_client`): every call goes through botocore whole, so the
check's faults fire on the consumer's writes as they would on DynamoDB's; what the zoo proves is
the check, single-threaded. (The example consumers are checked on DynamoDB Local.)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from lambda_inbox_tools.testing import (
    CheckClock,
    NotEffectivelyOnce,
    Report,
    check_effectively_once,
    dynamodb_stream_record,
    kafka_record,
    kinesis_record,
    sqs_record,
)

from .zoo_dynamodb import (
    every_cancellation_a_duplicate,
    ignores_unprocessed_items,
    reads_stale_then_writes,
    reads_then_writes,
    retries_unprocessed_items,
)
from .zoo_ledger import OK, RUN, cancelled_by_condition, deliveries
from .zoo_ledger import Ledger as Ledger  # the zoo's tests build ledgers of their own
from .zoo_mapping import (
    Deployed,
    big_batch_in_one_transaction,
    goes_on_after_a_failure,
    partial_responses_with_the_setting,
    partial_responses_without_the_setting,
    small_batch_in_one_transaction,
)
from .zoo_order import (
    goes_on_past_a_failure,
    mark_per_key,
    mark_per_shard,
    mark_per_shard_in_parallel,
    one_mark_across_groups,
)
from .zoo_producers import (
    VOLATILE,
    keyed_by_body_hash,
    keyed_by_event_hash,
    keyed_by_event_hash_without_volatile_fields,
)
from .zoo_sns import (
    SNS,
    keyed_by_the_sqs_message_id,
    message_key,
    notification_records,
    with_the_sns_envelope,
)
from .zoo_styles import returns_an_empty_object, returns_none, returns_none_without_the_setting
from .zoo_time import client_request_token_only, inbox_kept_7_days, inbox_kept_15_minutes
from .zoo_writes import (
    audit_then_effect_then_mark,
    audit_then_transaction,
    counter_then_mark_then_effect,
)

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
#: Any consumer of the zoo (AWS accepts other returns: devkit.zoo_styles).
AnyHandler = Callable[[dict[str, Any], Any], Any]
SOURCES = ("sqs", "fifo", "kafka", "kinesis", "dynamodb")


def seeds_played() -> range:
    """The seeds a suite plays the check on: 0 to `ZOO_SEEDS` - 1 (the Makefile's `check` 1,
    `test` 2 by default, `soak` 50)."""
    return range(int(os.environ.get("ZOO_SEEDS", "2")))


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
                if cancelled_by_condition(error):
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
                if not cancelled_by_condition(error):
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


BROKEN: dict[str, Callable[[Ledger], AnyHandler]] = {
    "no inbox": no_inbox,
    "effect first, mark second": effect_then_mark,
    "mark first, effect second": mark_then_effect,
    "acknowledge without writing": acknowledges_without_writing,
    "inbox record outside the domain transaction": inbox_outside_the_transaction,
    "key includes the delivery id": keyed_by_delivery_id,
    # Broken by their template (devkit.zoo_mapping): the check must play its settings.
    "partial responses without ReportBatchItemFailures": partial_responses_without_the_setting,
    "a whole batch of 100 in one transaction": big_batch_in_one_transaction,
    # Misreading DynamoDB's own failures (devkit.zoo_dynamodb).
    "every cancelled transaction taken for a duplicate": every_cancellation_a_duplicate,
    "UnprocessedItems ignored": ignores_unprocessed_items,
    # Keyed by something a producer's retry changes (devkit.zoo_producers).
    "key is a hash of the body's bytes": keyed_by_body_hash,
    "key is a hash of the event with its sent_at": keyed_by_event_hash,
    # Two invocations holding the same message (tools/lambda_inbox_tools/testing/check/overlap.py).
    "reads, then writes without a condition": reads_then_writes,
    # A stale read (check/stale.py).
    "reads without ConsistentRead, then writes without a condition": reads_stale_then_writes,
    # A harmless write first, then a commit in separate writes (devkit.zoo_writes).
    "an audit item first, then effect and mark apart": audit_then_effect_then_mark,
    "a delivery counter first, then mark and effect apart": counter_then_mark_then_effect,
    # Order (tools/lambda_inbox_tools/testing/check/order.py, lanes.py; devkit.zoo_order).
    "goes on after a failure in its group": goes_on_after_a_failure,
    "a high-water mark that goes on past a failure": goes_on_past_a_failure,
    "one high-water mark across groups, partitions and shards": one_mark_across_groups,
    "a high-water mark per shard under ParallelizationFactor 2": mark_per_shard_in_parallel,
    # Dedupe that lapses before a late redelivery (devkit.zoo_time).
    "inbox records kept 15 minutes": inbox_kept_15_minutes,
    "ClientRequestToken as the only dedupe": client_request_token_only,
    # SNS's redelivery under a new SQS messageId (devkit.zoo_sns).
    "SNS notifications keyed by the SQS messageId": keyed_by_the_sqs_message_id,
}

#: Correct consumers besides `transactional_inbox`: the same code as a broken one under other
#: settings.
CONTROLS: dict[str, Callable[[Ledger], AnyHandler]] = {
    "transactional inbox": transactional_inbox,
    "partial responses with ReportBatchItemFailures": partial_responses_with_the_setting,
    "a whole batch of 10 in one transaction": small_batch_in_one_transaction,
    "UnprocessedItems sent again": retries_unprocessed_items,
    "key is a hash of the event without its sent_at": keyed_by_event_hash_without_volatile_fields,
    "inbox records kept 7 days": inbox_kept_7_days,
    'envelope="sns", no key extractor': with_the_sns_envelope,
    # Every return style AWS accepts (devkit.zoo_styles).
    "AWS's basic style: raises on failure, returns None": returns_none,
    "raises on failure, returns None, without ReportBatchItemFailures": (
        returns_none_without_the_setting
    ),
    "raises on failure, returns {}": returns_an_empty_object,
    "an audit item first, then one transaction": audit_then_transaction,
    "a high-water mark per group, partition or key, ParallelizationFactor 2": mark_per_key,
    "a high-water mark per shard, ParallelizationFactor 1": mark_per_shard,
}

_STREAMS = ("kinesis", "dynamodb")
#: Consumers played on some sources only, and which (the SNS consumers read notifications; a
#: mark per key needs an order AWS keeps; `ParallelizationFactor` is a stream's).
ONLY_ON: dict[str, tuple[str, ...]] = {
    "SNS notifications keyed by the SQS messageId": (SNS,),
    'envelope="sns", no key extractor': (SNS,),
    "a high-water mark per shard under ParallelizationFactor 2": _STREAMS,
    "a high-water mark per group, partition or key, ParallelizationFactor 2": (
        "fifo",
        "kafka",
        *_STREAMS,
    ),
    "a high-water mark per shard, ParallelizationFactor 1": _STREAMS,
}

#: Sources on which a consumer of BROKEN is broken but the check cannot show it, and why.
UNSEEN_ON: dict[str, dict[str, str]] = {
    "goes on after a failure in its group": dict.fromkeys(
        ("kafka", "kinesis", "dynamodb"),
        "Lambda delivers a partition or shard again from its first reported failure whatever "
        "the response says of later records: no record is acknowledged out of order, and the "
        "effects' order shows only where effects() encodes it",
    ),
}

#: How many messages a consumer is played (8 unless named): enough for its mistake to show, and
#: for a consumer whose message makes two writes or more (a fault owed at each kind of write,
#: tools/lambda_inbox_tools/testing/check/schedule.py), enough new work for each owed fault.
MESSAGES: dict[Callable[[Ledger], AnyHandler], int] = {
    big_batch_in_one_transaction: 120,
    small_batch_in_one_transaction: 40,
    **dict.fromkeys(
        (
            ignores_unprocessed_items,
            retries_unprocessed_items,
            audit_then_effect_then_mark,
            counter_then_mark_then_effect,
            audit_then_transaction,
        ),
        12,
    ),
}


_NO_PRODUCER_RETRY = (
    "a DynamoDB stream has no producer retry: an item written again unchanged makes no record"
)
#: Sources on which a consumer of BROKEN is not broken, and why.
SOUND_ON: dict[str, dict[str, str]] = {
    "key includes the delivery id": {
        "dynamodb": (
            "a DynamoDB stream record's eventID is the same on every delivery of it, and no "
            "producer retry makes a new record of the same change (an item written again "
            "unchanged makes no stream record)"
        ),
    },
    "a whole batch of 100 in one transaction": {
        "fifo": "Lambda hands a FIFO queue's function at most 10 messages a batch",
    },
    "goes on after a failure in its group": {
        "sqs": "a standard queue promises no order",
    },
    "one high-water mark across groups, partitions and shards": {
        "dynamodb": (
            "the zoo's table stream is one shard, whose order Lambda keeps whole without "
            "ParallelizationFactor"
        ),
    },
    "key is a hash of the body's bytes": {"dynamodb": _NO_PRODUCER_RETRY},
    "key is a hash of the event with its sent_at": {"dynamodb": _NO_PRODUCER_RETRY},
}


def sources(name: str) -> list[str]:
    """The sources the consumer `name` (of BROKEN or CONTROLS) is played on: its one source
    (`ONLY_ON`), or every one of SOURCES where it is broken and the check can see it."""
    if name in ONLY_ON:
        return list(ONLY_ON[name])
    skipped = {**SOUND_ON.get(name, {}), **UNSEEN_ON.get(name, {})} if name in BROKEN else {}
    return [source for source in SOURCES if source not in skipped]


def records(source: str, count: int = 8) -> list[dict[str, Any]]:
    """`count` messages as `source` (one of SOURCES, or "sns") delivers them, numbered in the
    order they were produced (`E-<n>`): FIFO in 3 groups, Kafka on 3 partitions, Kinesis on 2
    shards (4 partition keys), a table's stream of 3 items, "sns" a standard queue an SNS topic
    feeds."""
    bodies: list[dict[str, Any]] = [
        {"event_id": f"E-{n}", "points": n + 1, "sent_at": f"2024-11-21T12:{n % 60:02d}:00Z"}
        for n in range(count)
    ]
    if source == SNS:
        return notification_records(bodies)
    if source == "sqs":
        return [sqs_record(body) for body in bodies]
    if source == "fifo":
        return [
            sqs_record(b, group=f"G-{n % 3}", dedup=str(b["event_id"]))
            for n, b in enumerate(bodies)
        ]
    if source == "kinesis":  # partition keys M-0 and M-2 on shard 0, M-1 and M-3 on shard 1
        return [
            kinesis_record(
                n, body, partition_key=f"M-{n % 4}", shard_id=f"shardId-00000000000{n % 2}"
            )
            for n, body in enumerate(bodies)
        ]
    if source == "dynamodb":  # three items, each changed in turn
        return [
            dynamodb_stream_record(n, {"pk": RUN, "sk": f"M-{n % 3}"}, new_image=body)
            for n, body in enumerate(bodies)
        ]
    return [kafka_record(n % 3, n // 3, body, topic="points") for n, body in enumerate(bodies)]


def check(consumer: Callable[[Ledger], AnyHandler], source: str, seed: int) -> Report:
    """One run of the check on a fresh ledger (raises what the check raises)."""
    return run(consumer, source, seed, Ledger.in_memory())


def run(consumer: Callable[[Ledger], AnyHandler], source: str, seed: int, ledger: Ledger) -> Report:
    """One run of the check on `ledger`: batches of 4, or what the consumer's template says;
    the ledger's clock the check's."""
    clock = CheckClock()
    ledger.clock = clock
    handler = consumer(ledger)
    return check_effectively_once(
        handler,
        records(source, MESSAGES.get(consumer, 8)),
        effects=ledger.effects,
        key=message_key,
        clients=[ledger.dynamodb],
        seed=seed,
        batch_size=None if isinstance(handler, Deployed) else 4,
        volatile=VOLATILE,
        clock=clock,
    )


def verdict(consumer: Callable[[Ledger], AnyHandler], source: str, seed: int) -> str | None:
    """What the check said of one run: None when it passed, else the label of its first finding
    ("lost", "applied twice", "unexpected", "acknowledged out of order", "messages still
    unacknowledged after N invocations"), read from the report the failure carries."""
    try:
        check(consumer, source, seed)
    except NotEffectivelyOnce as finding:
        return finding.report.problems[0].split(":", 1)[0].split(";", 1)[0]
    return None


@dataclass(frozen=True, slots=True)
class Row:
    """One consumer on one source: what the check said of each seed (None: it passed)."""

    name: str
    source: str
    #: A control (must pass every seed), or a broken consumer (must be caught on every seed).
    control: bool
    said: dict[int, str | None]

    @property
    def wrong(self) -> list[int]:
        """The seeds the check got wrong: a broken consumer passed, or a control was reported."""
        return [seed for seed, found in self.said.items() if (found is None) != self.control]


def table(seeds: Iterable[int], only: Iterable[str] | None = None) -> list[Row]:
    """Every consumer of BROKEN and CONTROLS (of `only`, when given) on each of its sources: what
    the check said of each of `seeds`."""
    chosen = list(seeds)
    names = set(only) if only is not None else None
    rows = []
    for control, consumers in ((False, BROKEN), (True, CONTROLS)):
        for name, consumer in consumers.items():
            if names is not None and name not in names:
                continue
            for source in sources(name):
                said = {seed: verdict(consumer, source, seed) for seed in chosen}
                rows.append(Row(name, source, control, said))
    return rows
