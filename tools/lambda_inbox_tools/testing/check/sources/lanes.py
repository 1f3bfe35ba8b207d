"""The ordered sources the effectively-once check plays against a handler: Kafka (`play_kafka`),
Kinesis and DynamoDB Streams (`play_stream`). A lane is what AWS keeps in order: a Kafka
partition, a stream's shard, or under `ParallelizationFactor` a shard's partition key (Kinesis)
or item (DynamoDB Streams), which Lambda then processes concurrently, each in order ("Lambda
still ensures in-order processing at the partition-key level", Using Lambda with Kinesis,
https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html).

Each lane is delivered in order, and again from its first failure (AWS's rule, through
`batch_responses`, the function the local stack's pollers use); lanes interleave, the first
batch beginning with another lane than the earliest record's (order AWS does not promise across
lanes); every lane is rewound once to an earlier committed position (a rebalance, a lost
checkpoint); while faults are owed, a batch holds a later record of its first record's key
(partition, partition key, item), so that the owed fault on the first record leaves a later
one of its key in the batch. Two invocations hold the same records at once, as after a Kafka
rebalance (the partition's new owner reads from the committed offset while the old one still
runs) or a stream's retry of an invocation still running.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ....batch_responses import kafka_next_offsets, stream_first_failure
from ....local.invoker import Invocation
from ...events import kafka_event, record_id
from ...stream_events import (
    dynamodb_stream_event,
    kinesis_event,
    produced_again,
    record_sequence,
    shard_of,
)
from ..driver import Driver
from ..mapping import Played
from .draws import Draws, outcome

__all__ = ["order_key", "play_kafka", "play_stream", "stream_lane"]

Record = Mapping[str, Any]
Lanes = dict[str, list[dict[str, Any]]]


def order_key(record: Record) -> str:
    """What AWS keeps a record in order with: a Kafka partition, a Kinesis record's partition
    key, a DynamoDB stream record's item."""
    if "kinesis" in record:
        return f"{shard_of(record)}#{record['kinesis'].get('partitionKey')}"
    if "dynamodb" in record:
        return f"{shard_of(record)}#{json.dumps(record['dynamodb'].get('Keys'), sort_keys=True)}"
    return f"{record['topic']}-{record['partition']}"


def stream_lane(record: Record, parallelization: int) -> str:
    """The lane of a stream record: its shard, or its key under `ParallelizationFactor`."""
    return shard_of(record) if parallelization <= 1 else order_key(record)


def _rewind(lanes: Lanes, position: dict[str, int], name: str, draws: Draws, owed: bool) -> None:
    """Back to an earlier committed position of a lane (a rebalance, a lost checkpoint), never
    before a record under observation, unless the rewind is owed and there is no other way:
    those records' effects are witnessed first."""
    lane = lanes[name][: position[name]]
    floor = max((i + 1 for i, r in enumerate(lane) if record_id(r) in draws.observed), default=0)
    if owed and floor >= position[name] > 0:
        watched = [r for r in lane if record_id(r) in draws.observed]
        draws.witness(watched)
        draws.observed.difference_update(record_id(r) for r in watched)
        floor = 0
    if floor < position[name]:
        position[name] = draws.rng.randint(floor, position[name] - 1)
        draws.report.replays += 1
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


def _pending(lanes: Lanes, position: dict[str, int], draws: Draws) -> list[str] | None:
    """The lanes with records left, after this turn's rewinds; None when the run is done."""
    while True:
        _draw_rewinds(lanes, position, draws)
        pending = [name for name in lanes if position[name] < len(lanes[name])]
        if pending:
            return pending
        if _finished(lanes, position, draws):
            return None


def _later_of_its_key(lane: Sequence[Record], start: int, draws: Draws) -> bool:
    """Whether the lane's next record is new work with a later record of its key pending."""
    first = order_key(lane[start])
    later = any(order_key(r) == first for r in lane[start + 1 :])
    return later and draws.fresh(lane[start : start + 1])


def _reaching_its_key(lane: Sequence[Record], start: int, size: int, most: int) -> int:
    """`size`, or more (up to `most`) so that the batch from `start` holds the next record of
    its first record's key."""
    first = order_key(lane[start])
    later = next((n for n in range(start + 1, len(lane)) if order_key(lane[n]) == first), None)
    return size if later is None else max(size, min(most, later - start + 1))


def play_stream(records: Sequence[Record], driver: Driver, draws: Draws, played: Played) -> None:
    """Kinesis or DynamoDB Streams (see the module): one lane an invocation, in sequence order,
    at most `batch_size` records; a failed invocation again whole, a partial response from the
    lowest sequence number it names; an acknowledged Kinesis record put again by its producer at
    the end of its shard under a new sequence number. (A DynamoDB stream has no such retry: an
    item written again unchanged makes no stream record.)"""
    rng = draws.rng
    lanes: Lanes = {}
    for record in records:
        lanes.setdefault(stream_lane(record, played.parallelization), []).append(dict(record))
    for lane in lanes.values():
        lane.sort(key=lambda r: int(record_sequence(r)))
    last_in_shard: dict[str, int] = {}
    for record in records:
        shard = shard_of(record)
        last_in_shard[shard] = max(last_in_shard.get(shard, 0), int(record_sequence(record)))
    draws.full_size = min(played.batch_size, max(map(len, lanes.values())))
    position = dict.fromkeys(lanes, 0)
    first_lane, shard = stream_lane(records[0], played.parallelization), shard_of(records[0])
    while (pending := _pending(lanes, position, draws)) is not None:
        order = rng.sample(pending, len(pending))
        if draws.owed_across:  # a later record of the earliest one's shard first, if any
            order.sort(key=lambda lane: lane == first_lane or shard_of(lanes[lane][0]) != shard)
        order = draws.across(order, first_lane)
        name = draws.preferred(
            driver, order, lambda n: _later_of_its_key(lanes[n], position[n], draws)
        )[0]
        lane, start = lanes[name], position[name]
        size = draws.room(driver, played, lane[start:])
        if draws.faulting(driver):
            size = _reaching_its_key(lane, start, size, played.batch_size)
        size = draws.cut(driver, lane[start:], size, first=True)
        batch = lane[start : start + size]
        build = kinesis_event if "kinesis" in batch[0] else dynamodb_stream_event
        if draws.overlap_now(driver, batch):  # the invocation retried while it still runs
            draws.overlapped()
            answer = driver.invoke_overlapping(
                [(build(batch), len(batch)), (build(batch), len(batch))]
            )[1]
        else:
            answer = driver.invoke(build(batch), len(batch), draws.fresh(batch))
        numbers = [record_sequence(r) for r in batch]
        failed_at = stream_first_failure(numbers, outcome(answer, numbers, played))
        done = batch if failed_at is None else batch[:failed_at]
        draws.delivered(len(batch), len(done))
        draws.observe(driver, batch, done)
        position[name] += len(done)
        for record in done:
            if "kinesis" in record and draws.new_id(record):
                shard = shard_of(record)
                last_in_shard[shard] += 1
                lane.append(draws.copy(produced_again(record, str(last_in_shard[shard]))))


def _following(batch: Sequence[Record], answer: Invocation, played: Played) -> dict[str, int]:
    """Per partition of `batch`: the next offset after `answer` (AWS's rule)."""
    identifiers = [(f"{r['topic']}-{r['partition']}", int(r["offset"])) for r in batch]
    return kafka_next_offsets(identifiers, outcome(answer, identifiers, played))


def play_kafka(records: Sequence[Record], driver: Driver, draws: Draws, played: Played) -> None:
    """Partitions interleaved, each in offset order, at most `batch_size` records an
    invocation; a failed batch again from its first reported offset; every partition rewound at
    least once to an earlier committed offset (a rebalance); an acknowledged record produced
    again at the end of its partition under a new offset (a producer retry)."""
    rng = draws.rng
    lanes: Lanes = {}
    for record in records:
        lanes.setdefault(order_key(record), []).append(dict(record))
    for lane in lanes.values():
        lane.sort(key=lambda r: int(r["offset"]))
    fullest = len(records) if played.batching_window > 0 else max(map(len, lanes.values()))
    draws.full_size = min(played.batch_size, fullest)
    position = dict.fromkeys(lanes, 0)
    while (pending := _pending(lanes, position, draws)) is not None:
        rng.shuffle(pending)
        pending = draws.across(pending, order_key(records[0]))
        pending = draws.preferred(
            driver, pending, lambda p: _later_of_its_key(lanes[p], position[p], draws)
        )
        batch_size = draws.room(
            driver, played, [r for p in pending for r in lanes[p][position[p] :]]
        )
        taken: dict[str, list[dict[str, Any]]] = {}
        # With a batching window, records waiting fill the batch; without, a poll takes what
        # has arrived: some of the partitions.
        polled = len(pending) if played.batching_window > 0 else rng.randint(1, len(pending))
        for name in pending[:polled]:
            room = batch_size - sum(len(t) for t in taken.values())
            if not taken and draws.faulting(driver):  # a later record of the first's partition
                room = min(played.batch_size, max(room, 2))
            if room <= 0:
                break
            room = draws.cut(driver, lanes[name][position[name] :], room, first=not taken)
            if room > 0:
                taken[name] = lanes[name][position[name] : position[name] + room]
        batch = [r for name in taken for r in taken[name]]
        if draws.overlap_now(driver, batch):  # a rebalance: the first partition read again
            draws.overlapped()
            moved = next(iter(taken))
            first, second = driver.invoke_overlapping(
                [(kafka_event(batch), len(batch)), (kafka_event(taken[moved]), len(taken[moved]))]
            )
            following = _following(batch, first, played) | _following(taken[moved], second, played)
        else:
            answer = driver.invoke(kafka_event(batch), len(batch), draws.fresh(batch))
            following = _following(batch, answer, played)
        done = {
            name: [r for r in mine if int(r["offset"]) < following[name]]
            for name, mine in taken.items()
        }
        acknowledged = [r for records_done in done.values() for r in records_done]
        draws.delivered(len(batch), len(acknowledged))
        draws.observe(driver, batch, acknowledged)
        for name, records_done in done.items():
            position[name] += len(records_done)
            for record in records_done:
                if draws.new_id(record):
                    again = copy.deepcopy(record)
                    again["offset"] = int(lanes[name][-1]["offset"]) + 1
                    lanes[name].append(draws.copy(again))
