"""What a run of the effectively-once check still owes at its end, played then: the duplicate
and the new-id delivery the draws found no room for, and rounds of every message again for the
owed faults, overlaps and full batch, the effects of the messages under observation witnessed
first so that the redelivery cannot hide a loss."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...events import delivered_again, record_id
from ...stream_events import produced_again, record_sequence, shard_of
from ..driver import Driver
from ..mapping import Played
from .draws import Draws
from .queues import new_sqs_id

__all__ = ["OWED_ROUNDS", "owed_deliveries", "play_what_is_owed"]

Record = Mapping[str, Any]


#: How far past a partition's or shard's last position an owed copy goes (gaps are normal).
OWED_COPY_GAP = 1000


def owed_deliveries(records: Sequence[Record], draws: Draws) -> list[dict[str, Any]]:
    """What a run still owes at its end, when every acknowledged message was under
    observation: a duplicate of an SQS message, and a message under a new id (not on a
    DynamoDB stream). Counted as played."""
    owed: list[dict[str, Any]] = []
    rng = draws.rng
    if draws.owed_duplicate and "messageId" in records[0]:
        owed.append(delivered_again(rng.choice(list(records))))
        draws.owed_duplicate = False
        draws.report.duplicates += 1
    with_effect = [r for r in records if draws.has_effect(r)]
    if draws.owed_new_id and with_effect and "dynamodb" not in records[0]:
        record = rng.choice(with_effect)
        gap = OWED_COPY_GAP + len(draws.copied)
        if "messageId" in record:
            again = new_sqs_id(record)
        elif "kinesis" in record:
            shard = shard_of(record)
            last = max(int(record_sequence(r)) for r in records if shard_of(r) == shard)
            again = produced_again(record, str(last + gap))
        else:
            again = copy.deepcopy(dict(record))
            same = [
                r
                for r in records
                if (r["topic"], r["partition"]) == (again["topic"], again["partition"])
            ]
            again["offset"] = max(int(r["offset"]) for r in same) + gap
        owed.append(draws.copy(again))
        draws.owed_new_id = False
        draws.report.new_ids += 1
    return owed


#: Rounds of delivering everything again at the end, for the faults a run still owes.
OWED_ROUNDS = 3


def play_what_is_owed(
    records: Sequence[Record],
    driver: Driver,
    draws: Draws,
    played: Played,
    play: Callable[[Sequence[Record], Any, Draws, Played], None],
    report: Any,
) -> None:
    """A run whose invocations ended before every owed fault and overlap was played, or before a
    batch as full as the source can hand over, is given the chance: every message delivered
    again (a duplicate of each SQS message, a rewind of each Kafka partition and shard to its
    start), the effects of the messages under observation witnessed first, so the redelivery
    cannot hide a loss, until a round plays none of what is owed. Before that, the duplicate and
    the new-id delivery the draws never found room for (`owed_deliveries`)."""
    if draws.observed and (draws.owed_duplicate or draws.owed_new_id):
        draws.witness([r for r in records if record_id(r) in draws.observed])
        draws.observed.clear()
    owed = owed_deliveries(records, draws)
    owing: tuple[int, int] | None = None
    if owed:
        report.owed_rounds += 1
        play(owed, driver, draws.again(), played)
    for _ in range(OWED_ROUNDS):
        owes = driver.wrote and (driver.faults_owed or draws.owed_overlaps)
        if not owes and draws.full_batch_done:
            return
        if owing == (driver.faults_owed, draws.owed_overlaps) and draws.full_batch_done:
            return  # the last round played none of it: a duplicate may make fewer writes
        owing = (driver.faults_owed, draws.owed_overlaps)
        observed = [r for r in records if record_id(r) in draws.observed]
        draws.witness(observed)
        driver.last_round = True
        again = draws.again(draws.owed_overlaps)
        report.owed_rounds += 1
        play(
            [delivered_again(r) if "messageId" in r else r for r in records], driver, again, played
        )
        draws.owed_overlaps = again.owed_overlaps
        draws.full_batch_done = draws.full_batch_done or again.full_batch_done
