"""The event sources the effectively-once check plays against a handler, with what each really
does besides delivering: at-least-once duplicates, redeliveries of what a response reports or a
failed invocation leaves, rebalance rewinds, and messages delivered again under a new id (a
producer retry, or a redrive after a commit whose acknowledgement was lost).

Each player takes the records, a `Driver` (it invokes the handler and injects faults in its
writes) and `Draws` (the seeded random choices, and which faults every run owes); it returns
when every message is acknowledged. What counts as acknowledged follows AWS's partial batch
response rules, through the local stack's own readers (`sqs_poller.messages_to_delete`,
`kafka_poller.next_positions`; for streams, `stream_events.acknowledged_count`).
"""

from __future__ import annotations

import copy
import random
import uuid
from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...local.invoker import Invocation
from ...local.kafka_poller import KafkaRecord, next_positions
from ...local.sqs_poller import messages_to_delete
from ..events import delivered_again, kafka_event, record_id, sqs_event
from ..stream_events import (
    acknowledged_count,
    dynamodb_stream_event,
    kinesis_event,
    produced_again,
    record_sequence,
    shard_of,
)
from .mapping import Played
from .order import acknowledged_after_a_failure
from .retries import retried, sns_notification_id

Record = Mapping[str, Any]


class Driver(Protocol):
    #: The kind of fault that fired in the last invocation ("before", "after", "error"), if any.
    last_fault: str | None

    @property
    def faults_owed(self) -> int:
        """How many of the faults every run owes have not fired yet."""
        ...

    @property
    def can_overlap(self) -> bool:
        """Whether `invoke_overlapping` can be played."""
        ...

    def invoke_overlapping(self, events: list[tuple[dict[str, Any], int]]) -> list[Any]:
        """Invocations at once, on threads; each one's response (None: it failed)."""
        ...

    def invoke(self, event: dict[str, Any], size: int, fresh: bool) -> Any:
        """The handler's response, or None when the invocation crashed or raised. `fresh`: the
        batch starts with a first delivery (where an owed fault lands on new work)."""
        ...


@dataclass
class Draws:
    """The run's seeded choices, and the faults it owes whatever the draws: one duplicate of an
    acknowledged message, one delivery of an acknowledged message under a new id, and (Kafka)
    one rewind of each partition to an earlier committed offset.

    A message acknowledged by an invocation in which a write failed (`observe`) is never
    delivered again by the check's own choice: a consumer that acknowledged it without writing
    keeps that loss, which a chance redelivery would otherwise repair."""

    rng: random.Random
    #: 0 turns duplicates, new ids and rewinds off, the owed ones too.
    duplicate_rate: float
    #: Whether a record causes an effect (a key that is not None): the new-id copies are drawn
    #: among these, so that a copy always has something to double.
    has_effect: Callable[[Record], bool]
    owed_duplicate: bool = True
    owed_new_id: bool = True
    duplicates: int = 0
    new_ids: int = 0
    rewinds: int = 0
    rewound: set[str] = field(default_factory=set)
    #: The delivery ids (`events.record_id`) under observation (see above).
    observed: set[str] = field(default_factory=set)
    #: Delivery ids delivered again under a new id, and those new ids: a message is sent again
    #: once, and a copy is not copied (else a lane that rewinds could grow without end).
    copied: set[str] = field(default_factory=set)
    #: Called with observed records before an owed redelivery repeats them: the check looks at
    #: their effects then, so that the redelivery cannot hide a loss.
    witness: Callable[[Sequence[Record]], None] = lambda records: None

    def observe(self, driver: Driver, acknowledged: Sequence[Record]) -> None:
        self.done.update(self.identity(r) for r in acknowledged)
        if driver.last_fault in ("error", "dynamodb"):  # the handler saw a failed write
            self.observed.update(record_id(r) for r in acknowledged)

    def __post_init__(self) -> None:
        if self.duplicate_rate <= 0:
            self.owed_duplicate = self.owed_new_id = False

    def owes_rewind(self, partition: str) -> bool:
        return self.duplicate_rate > 0 and partition not in self.rewound

    def duplicate(self, record: Record) -> bool:
        if record_id(record) in self.observed:
            return False
        if self.owed_duplicate or self.rng.random() < self.duplicate_rate:
            self.owed_duplicate = False
            self.duplicates += 1
            return True
        return False

    def new_id(self, record: Record) -> bool:
        delivery = record_id(record)
        if not self.has_effect(record) or delivery in self.observed or delivery in self.copied:
            return False
        if self.owed_new_id or self.rng.random() < self.duplicate_rate / 3:
            self.owed_new_id = False
            self.new_ids += 1
            self.copied.add(delivery)
            return True
        return False

    #: What a message is, whatever its delivery (the check's `key`): a copy under a new id is
    #: no first delivery.
    identity: Callable[[Record], Hashable | None] = record_id
    #: The identities of the messages acknowledged so far.
    done: set[Hashable] = field(default_factory=set)

    def fresh(self, batch: Sequence[Record]) -> bool:
        """Whether `batch` starts with a message that causes an effect and was never
        acknowledged: new work, where a fault shows what it costs."""
        first = self.identity(batch[0])
        return first is not None and first not in self.done

    #: Whether a batch as full as the records allowed was acknowledged whole.
    full_batch_done: bool = False
    #: The fullest batch the source can hand over (the player sets it): `BatchSize`, or fewer
    #: when the records (of a shard, a partition) are fewer.
    full_size: int = 1

    def room(self, driver: Driver, played: Played, available: int) -> int:
        """The most records the next batch holds: fewer than `BatchSize` while faults are owed,
        so that each owed fault finds new work; then `BatchSize`. (A full batch is owed too:
        `full_batch_done`, played at the end if the run gave none.)"""
        owed = driver.faults_owed
        if owed:
            return max(1, min(played.batch_size, available // (owed + 1)))
        return played.batch_size

    def delivered(self, size: int, acknowledged: int) -> None:
        """After an invocation of `size` records, `acknowledged` of them."""
        if size >= self.full_size and acknowledged == size:
            self.full_batch_done = True

    #: FIFO responses judged for order, and what they acknowledged out of order (`order`).
    order_checks: int = 0
    out_of_order: list[str] = field(default_factory=list)
    #: Two invocations holding the same SQS message at once, owed once a run (`overlap`).
    owed_overlap: bool = True
    #: The fields a producer stamps anew on every send (`retries.retried`).
    volatile: Sequence[str] = ()

    #: Copies under a new id that are SNS's redelivery of a notification (`retries`).
    sns_redeliveries: int = 0

    def copy(self, again: dict[str, Any]) -> dict[str, Any]:
        """`again`, a message delivered again under a new id, as its producer sends it again
        (`retries.retried`; an SNS notification: the same one, SNS's redelivery), noted as a
        copy."""
        if sns_notification_id(again) is not None:
            self.sns_redeliveries += 1
        else:
            again = retried(again, self.rng, self.volatile)
        self.copied.add(record_id(again))
        return again


def _acknowledged(batch: Sequence[Record], response: Any, played: Played) -> set[str]:
    """The messages of `batch` the SQS mapping deletes after `response` (None: the invocation
    failed or crashed), by the local stack's own reader (`sqs_poller.messages_to_delete`)."""
    ids = [str(r["messageId"]) for r in batch]
    invocation = Invocation(response, None if response is not None else "failed", 0.0)
    if response is None:
        return set()
    return set(messages_to_delete(ids, invocation, played.report_batch_item_failures))


def new_sqs_id(record: Record) -> dict[str, Any]:
    """The same message delivered under a new messageId (SQS assigns one to every send and to
    every message a redrive moves), received for the first time."""
    again = delivered_again(record)
    again["messageId"] = str(uuid.uuid4())
    again["attributes"]["ApproximateReceiveCount"] = "1"
    if "SequenceNumber" in again["attributes"]:
        again["attributes"]["SequenceNumber"] = str(int(again["attributes"]["SequenceNumber"]) + 1)
    return again


def play_sqs(records: Sequence[Record], driver: Driver, draws: Draws, played: Played) -> None:
    """A standard queue: any order, batches of up to `batch_size`, at-least-once."""
    rng = draws.rng
    queue = list(records)
    rng.shuffle(queue)
    draws.full_size = min(played.batch_size, len(queue))
    while queue:
        room = draws.room(driver, played, len(queue))
        batch, queue = queue[:room], queue[room:]
        if _overlap_now(batch, driver, draws):
            queue[:0] = _play_overlap(batch, driver, draws, played)
            continue
        acked = _acknowledged(
            batch, driver.invoke(sqs_event(*batch), len(batch), draws.fresh(batch)), played
        )
        draws.delivered(len(batch), len(acked))
        draws.observe(driver, [r for r in batch if str(r["messageId"]) in acked])
        for record in batch:
            if str(record["messageId"]) not in acked:  # visible again after its timeout
                queue.insert(rng.randint(0, len(queue)), delivered_again(record))
                continue
            if draws.duplicate(record):  # delivered once more, later (at-least-once delivery)
                queue.insert(rng.randint(0, len(queue)), delivered_again(record))
            if draws.new_id(record):
                queue.insert(rng.randint(0, len(queue)), draws.copy(new_sqs_id(record)))


def _group(record: Record) -> str:
    return str(record["attributes"]["MessageGroupId"])


def _overlap_now(batch: Sequence[Record], driver: Driver, draws: Draws) -> bool:
    """The owed overlap, on the first batch that starts with new work."""
    return (
        draws.owed_overlap
        and draws.duplicate_rate > 0
        and driver.can_overlap
        and draws.fresh(batch)
    )


def _play_overlap(
    batch: Sequence[Record], driver: Driver, draws: Draws, played: Played
) -> list[dict[str, Any]]:
    """`batch`, and its first message again in a second invocation at once (its visibility
    timeout lapsed). Only the later receipt deletes it (SQS: an older receipt handle may not);
    what is not acknowledged comes back (returned, first in the queue)."""
    draws.owed_overlap = False
    shared = delivered_again(batch[0])
    first, second = driver.invoke_overlapping(
        [(sqs_event(*batch), len(batch)), (sqs_event(shared), 1)]
    )
    acked = _acknowledged(batch[1:], first, played) | _acknowledged([shared], second, played)
    draws.observe(driver, [r for r in batch if str(r["messageId"]) in acked])
    return [delivered_again(r) for r in batch if str(r["messageId"]) not in acked]


def play_fifo(records: Sequence[Record], driver: Driver, draws: Draws, played: Played) -> None:
    """A FIFO queue: each message group in order, one batch of a group in flight at a time;
    a message not acknowledged, and the rest of its group, come first again. An acknowledged
    batch whose deletion was lost comes back whole, before the rest of its group."""
    rng = draws.rng
    groups: dict[str, deque[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(record["attributes"]["MessageGroupId"], deque()).append(dict(record))
    draws.full_size = min(played.batch_size, max(len(lane) for lane in groups.values()))
    while any(groups.values()):
        open_groups = [g for g, lane in groups.items() if lane]
        rng.shuffle(open_groups)
        batch: list[dict[str, Any]] = []
        taken: dict[str, int] = {}
        available = sum(len(lane) for lane in groups.values())
        batch_size = draws.room(driver, played, available)
        for group in open_groups:
            room = batch_size - len(batch)
            if room <= 0:
                break
            most = min(room, len(groups[group]))
            # While faults are owed, a group brings two messages at least: an owed fault lands
            # on the batch's first write, before a later message of the same group.
            least = min(2, most) if driver.faults_owed and not batch else 1
            count = rng.randint(least, most)
            batch += [groups[group].popleft() for _ in range(count)]
            taken[group] = count
        response = driver.invoke(sqs_event(*batch), len(batch), draws.fresh(batch))
        acked = _acknowledged(batch, response, played)
        if response is not None and played.report_batch_item_failures:
            draws.order_checks += 1
            draws.out_of_order += acknowledged_after_a_failure(
                batch, acked, _group, lambda r: str(r["messageId"])
            )
        draws.delivered(len(batch), len(acked))
        draws.observe(driver, [r for r in batch if str(r["messageId"]) in acked])
        for group in taken:
            mine = [r for r in batch if r["attributes"]["MessageGroupId"] == group]
            back = [delivered_again(r) for r in mine if str(r["messageId"]) not in acked]
            if not back and all(draws.duplicate(r) for r in mine[:1]):  # the deletion was lost
                back = [delivered_again(r) for r in mine if record_id(r) not in draws.observed]
            groups[group].extendleft(reversed(back))
            for record in mine:
                if str(record["messageId"]) in acked and draws.new_id(record):
                    groups[group].append(draws.copy(new_sqs_id(record)))


Lanes = dict[str, list[dict[str, Any]]]


def _rewind(lanes: Lanes, position: dict[str, int], name: str, draws: Draws, owed: bool) -> None:
    """Back to an earlier committed position of a partition or shard (a rebalance, a lost
    checkpoint), never before a record under observation, unless the rewind is owed and there
    is no other way: those records' effects are witnessed first."""
    lane = lanes[name][: position[name]]
    floor = max((i + 1 for i, r in enumerate(lane) if record_id(r) in draws.observed), default=0)
    if owed and floor >= position[name] > 0:
        watched = [r for r in lane if record_id(r) in draws.observed]
        draws.witness(watched)
        draws.observed.difference_update(record_id(r) for r in watched)
        floor = 0
    if floor < position[name]:
        position[name] = draws.rng.randint(floor, position[name] - 1)
        draws.rewinds += 1
    draws.rewound.add(name)


def _draw_rewinds(lanes: Lanes, position: dict[str, int], draws: Draws) -> None:
    """Before an invocation: each lane rewound by chance, the owed rewinds sooner."""
    rng = draws.rng
    for name in lanes:
        owed = draws.owes_rewind(name)
        if position[name] > 0 and (
            (owed and rng.random() < 0.5) or rng.random() < draws.duplicate_rate / 2
        ):
            _rewind(lanes, position, name, draws, owed)


def _finished(lanes: Lanes, position: dict[str, int], draws: Draws) -> bool:
    """Every lane read to its end and rewound once; a lane finished before its owed rewind is
    rewound now (False: there is more to play)."""
    owed = [name for name in lanes if draws.owes_rewind(name) and position[name] > 0]
    for name in owed:
        _rewind(lanes, position, name, draws, True)
    return not owed


def play_stream(records: Sequence[Record], driver: Driver, draws: Draws, played: Played) -> None:
    """Kinesis or DynamoDB Streams: shards interleaved, one shard an invocation (Lambda's rule),
    each in sequence order, at most `batch_size` records; a failed invocation again whole, a
    partial response from the lowest sequence number it names; every shard rewound at least once
    to an earlier checkpoint; an acknowledged Kinesis record put again by its producer at the end
    of its shard under a new sequence number. (A DynamoDB stream has no such retry: an item
    written again unchanged makes no stream record.)"""
    rng = draws.rng
    lanes: Lanes = {}
    for record in records:
        lanes.setdefault(shard_of(record), []).append(dict(record))
    for lane in lanes.values():
        lane.sort(key=lambda r: int(record_sequence(r)))
    draws.full_size = min(played.batch_size, max(map(len, lanes.values())))
    position = dict.fromkeys(lanes, 0)
    while True:
        _draw_rewinds(lanes, position, draws)
        pending = [name for name in lanes if position[name] < len(lanes[name])]
        if not pending:
            if _finished(lanes, position, draws):
                return
            continue
        name = rng.choice(pending)
        available = len(lanes[name]) - position[name]
        batch_size = draws.room(driver, played, available)
        batch = lanes[name][position[name] : position[name] + batch_size]
        build = kinesis_event if "kinesis" in batch[0] else dynamodb_stream_event
        response = driver.invoke(build(batch), len(batch), draws.fresh(batch))
        if played.report_batch_item_failures or response is None:
            done = batch[: acknowledged_count(batch, response)]
        else:  # Lambda does not read the response: the whole batch is checkpointed
            done = batch
        draws.delivered(len(batch), len(done))
        draws.observe(driver, done)
        position[name] += len(done)
        for record in done:
            if "kinesis" in record and draws.new_id(record):
                last = int(record_sequence(lanes[name][-1]))
                lanes[name].append(draws.copy(produced_again(record, str(last + 1))))


def play_kafka(records: Sequence[Record], driver: Driver, draws: Draws, played: Played) -> None:
    """Partitions interleaved, each in offset order, at most `batch_size` records an
    invocation; a failed batch again from its first reported offset; every partition rewound at
    least once to an earlier committed offset (a rebalance); an acknowledged record produced
    again at the end of its partition under a new offset (a producer retry)."""
    rng = draws.rng
    lanes: Lanes = {}
    for record in records:
        lanes.setdefault(f"{record['topic']}-{record['partition']}", []).append(dict(record))
    for lane in lanes.values():
        lane.sort(key=lambda r: int(r["offset"]))
    fullest = len(records) if played.batching_window > 0 else max(map(len, lanes.values()))
    draws.full_size = min(played.batch_size, fullest)
    position = dict.fromkeys(lanes, 0)
    while True:
        _draw_rewinds(lanes, position, draws)
        pending = [p for p in lanes if position[p] < len(lanes[p])]
        if not pending:
            if _finished(lanes, position, draws):
                return
            continue
        rng.shuffle(pending)
        available = sum(len(lanes[p]) - position[p] for p in pending)
        batch_size = draws.room(driver, played, available)
        taken: dict[str, list[dict[str, Any]]] = {}
        # With a batching window, records waiting fill the batch; without, a poll takes what
        # has arrived: some of the partitions.
        polled = len(pending) if played.batching_window > 0 else rng.randint(1, len(pending))
        for name in pending[:polled]:
            room = batch_size - sum(len(t) for t in taken.values())
            if room <= 0:
                break
            taken[name] = lanes[name][position[name] : position[name] + room]
        batch = [r for name in taken for r in taken[name]]
        response = driver.invoke(kafka_event(batch), len(batch), draws.fresh(batch))
        invocation = Invocation(response, None if response is not None else "failed", 0.0)
        as_records = [
            KafkaRecord(r["topic"], int(r["partition"]), int(r["offset"]), 0, None, b"", [])
            for r in batch
        ]
        following = next_positions(as_records, invocation, played.report_batch_item_failures)
        done = {
            name: [
                r for r in mine if int(r["offset"]) < following[(r["topic"], int(r["partition"]))]
            ]
            for name, mine in taken.items()
        }
        acknowledged = [r for records_done in done.values() for r in records_done]
        draws.delivered(len(batch), len(acknowledged))
        draws.observe(driver, acknowledged)
        for name, records_done in done.items():
            position[name] += len(records_done)
            for record in records_done:
                if draws.new_id(record):
                    again = copy.deepcopy(record)
                    again["offset"] = int(lanes[name][-1]["offset"]) + 1
                    lanes[name].append(draws.copy(again))
