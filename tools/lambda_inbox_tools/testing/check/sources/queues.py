"""The SQS queues the effectively-once check plays against a handler (`play_sqs`, `play_fifo`):
at-least-once duplicates, redeliveries of what a response or a failed invocation leaves,
messages delivered again under a new id, and two invocations holding the same messages when a
visibility timeout runs out mid-invocation. What a response acknowledges follows AWS's rule
(`batch_responses`, the same function the local stack's SQS poller uses).
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from ....batch_responses import sqs_acknowledged
from ....local.invoker import Invocation
from ...events import delivered_again, record_id, sqs_event
from ..driver import Driver
from ..mapping import Played
from .draws import Draws, outcome
from .order import acknowledged_after_a_failure

__all__ = ["new_sqs_id", "play_fifo", "play_sqs"]

Record = Mapping[str, Any]


def _acknowledged(batch: Sequence[Record], answer: Invocation, played: Played) -> set[str]:
    """The messages of `batch` the SQS mapping deletes after `answer`."""
    ids = [str(r["messageId"]) for r in batch]
    return set(sqs_acknowledged(ids, outcome(answer, ids, played)))


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
    """A standard queue: any order (the first batch never begins with the earliest message),
    batches of up to `batch_size`, at-least-once."""
    rng = draws.rng
    queue = list(records)
    rng.shuffle(queue)
    turned = draws.across([record_id(r) for r in queue], record_id(records[0]))
    place = {delivery: n for n, delivery in enumerate(turned)}
    queue.sort(key=lambda r: place[record_id(r)])
    draws.full_size = min(played.batch_size, len(queue))
    while queue:
        room = draws.room(driver, played, queue)
        batch, queue = queue[:room], queue[room:]
        if draws.overlap_now(driver, batch):
            queue[:0] = _overlap(batch, driver, draws, played)
            continue
        answer = driver.invoke(sqs_event(*batch), len(batch), draws.fresh(batch))
        acked = _acknowledged(batch, answer, played)
        draws.delivered(len(batch), len(acked))
        draws.observe(driver, batch, [r for r in batch if str(r["messageId"]) in acked])
        for record in batch:
            if str(record["messageId"]) not in acked:  # visible again after its timeout
                queue.insert(rng.randint(0, len(queue)), delivered_again(record))
                continue
            if draws.duplicate(record):  # delivered once more, later (at-least-once delivery)
                queue.insert(rng.randint(0, len(queue)), delivered_again(record))
            if draws.new_id(record):
                queue.insert(rng.randint(0, len(queue)), draws.copy(new_sqs_id(record)))


def _overlap(
    batch: Sequence[Record], driver: Driver, draws: Draws, played: Played
) -> list[dict[str, Any]]:
    """`batch`, and its first message again in a second invocation at once (its visibility
    timeout lapsed). Only the later receipt deletes it (SQS: an older receipt handle may not);
    what is not acknowledged comes back (returned, first in the queue)."""
    draws.overlapped()
    shared = delivered_again(batch[0])
    first, second = driver.invoke_overlapping(
        [(sqs_event(*batch), len(batch)), (sqs_event(shared), 1)]
    )
    acked = (_acknowledged(batch, first, played) - {str(batch[0]["messageId"])}) | (
        _acknowledged([shared], second, played)
    )
    draws.observe(driver, batch, [r for r in batch if str(r["messageId"]) in acked])
    return [delivered_again(r) for r in batch if str(r["messageId"]) not in acked]


def _group(record: Record) -> str:
    return str(record["attributes"]["MessageGroupId"])


def _judged(batch: Sequence[Record], answer: Invocation, played: Played, draws: Draws) -> set[str]:
    """What the FIFO mapping deletes after `answer`, the response judged for order: a message
    acknowledged after an earlier one of its group failed is named (`order`)."""
    acked = _acknowledged(batch, answer, played)
    if not answer.failed and played.report_batch_item_failures:
        draws.report.order_checks += 1
        draws.report.out_of_order += acknowledged_after_a_failure(
            batch, acked, _group, lambda r: str(r["messageId"])
        )
    return acked


def play_fifo(records: Sequence[Record], driver: Driver, draws: Draws, played: Played) -> None:
    """A FIFO queue: each message group in order, one batch of a group in flight at a time (two
    when its visibility timeout runs out mid-invocation: the group's messages come again to a
    second invocation); a message not acknowledged, and the rest of its group, come first again.
    An acknowledged batch whose deletion was lost comes back whole, before the rest of its
    group. The first batch begins with another group than the earliest message's."""
    rng = draws.rng
    groups: dict[str, deque[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(_group(record), deque()).append(dict(record))
    draws.full_size = min(played.batch_size, max(len(lane) for lane in groups.values()))
    while any(groups.values()):
        open_groups = [g for g, lane in groups.items() if lane]
        rng.shuffle(open_groups)
        open_groups = draws.across(open_groups, _group(records[0]))
        open_groups = draws.preferred(
            driver,
            open_groups,
            lambda g: len(groups[g]) > 1 and draws.fresh(list(groups[g])[:1]),
        )
        batch: list[dict[str, Any]] = []
        taken: dict[str, int] = {}
        batch_size = draws.room(driver, played, [r for lane in groups.values() for r in lane])
        for group in open_groups:
            room = batch_size - len(batch)
            if not batch and draws.faulting(driver):
                # The owed fault lands on the batch's first message, before a later message of
                # the same group.
                room = min(played.batch_size, max(room, 2))
            if room <= 0:
                break
            most = draws.cut(driver, list(groups[group]), min(room, len(groups[group])), not batch)
            if most <= 0:
                continue
            least = min(2, most) if not batch and draws.faulting(driver) else 1
            count = rng.randint(least, most)
            batch += [groups[group].popleft() for _ in range(count)]
            taken[group] = count
        if draws.overlap_now(driver, batch):
            draws.overlapped()
            again = [delivered_again(r) for r in batch if _group(r) == _group(batch[0])]
            first, second = driver.invoke_overlapping(
                [(sqs_event(*batch), len(batch)), (sqs_event(*again), len(again))]
            )
            held = {str(r["messageId"]) for r in again}
            acked = (_judged(batch, first, played, draws) - held) | (
                _judged(again, second, played, draws)
            )
        else:
            answer = driver.invoke(sqs_event(*batch), len(batch), draws.fresh(batch))
            acked = _judged(batch, answer, played, draws)
            draws.delivered(len(batch), len(acked))
        draws.observe(driver, batch, [r for r in batch if str(r["messageId"]) in acked])
        for group in taken:
            mine = [r for r in batch if _group(r) == group]
            back = [delivered_again(r) for r in mine if str(r["messageId"]) not in acked]
            if not back and all(draws.duplicate(r) for r in mine[:1]):  # the deletion was lost
                back = [delivered_again(r) for r in mine if record_id(r) not in draws.observed]
            groups[group].extendleft(reversed(back))
            for record in mine:
                if str(record["messageId"]) in acked and draws.new_id(record):
                    groups[group].append(draws.copy(new_sqs_id(record)))
