"""The late redeliveries every run plays (`play_late`): acknowledged messages that cause an
effect delivered again hours or days after the run began, within the redrive window the app
declares (`check_effectively_once(redrive_window=...)`, by default the inbox's default retention,
7 days), the check's clock (`clock.CheckClock`) moved on to it and what DynamoDB would have
forgotten by then forgotten first (`expiry.Expiry`).

As each source brings a message back that late: SQS (standard and FIFO), a redrive from the
dead-letter queue or a send again, under a new `messageId`; Kafka and Kinesis, the same record
read again (a consumer group or a mapping started again from an earlier position); a DynamoDB
stream, the same record, no later than the stream keeps it (24 hours).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from ...events import record_id
from ..clock import CheckClock, late_span
from ..dynamodb.expiry import Expiry
from ..mapping import Played
from .draws import Draws
from .queues import new_sqs_id

__all__ = [
    "END_MARGIN",
    "LATE_AT_LEAST",
    "STREAM_RETENTION",
    "late_span",
    "play_late",
    "played_window",
]

Record = Mapping[str, Any]
#: How long a DynamoDB stream keeps a record (AWS: 24 hours).
STREAM_RETENTION = timedelta(hours=24)
#: How far short of the window's end the last late redelivery comes.
END_MARGIN = timedelta(minutes=1)
#: The earliest a late redelivery comes after the run began (or the window, if shorter).
LATE_AT_LEAST = timedelta(hours=1)


def play_late(
    records: Sequence[Record],
    driver: Any,
    draws: Draws,
    played: Played,
    play: Callable[[Sequence[Record], Any, Draws, Played], None],
    *,
    key: Callable[[Record], Hashable | None],
    expiry: Expiry | None,
    clock: CheckClock,
    began: float,
    window: timedelta,
) -> list[str]:
    """Two late redeliveries (see the module), each of a message drawn among those that cause an
    effect: one at a time drawn between an hour (or the window, if shorter) and the window's
    end, one at the window's end, so that any dedupe that lapses within the window is seen.
    What was played, for the report (none when the run plays no redeliveries, or no message
    causes an effect)."""
    with_effect = [r for r in records if draws.has_effect(r)]
    if draws.duplicate_rate <= 0 or not with_effect:
        return []
    if draws.observed:  # a redelivery must not repair a loss unseen
        draws.witness([r for r in records if record_id(r) in draws.observed])
        draws.observed.clear()
    window = played_window(records, window)
    rng = draws.rng
    # The window's last minute: TTLs are whole seconds, and the clock runs on while a
    # delivery is played.
    longest = max(window.total_seconds() - END_MARGIN.total_seconds(), 1.0)
    drawn = rng.uniform(min(LATE_AT_LEAST.total_seconds(), longest), longest)
    played_late: list[str] = []
    for delay in (drawn, longest):
        record = rng.choice(with_effect)
        clock.advance(began + delay - clock())
        removed = expiry.expire() if expiry is not None else 0
        again = new_sqs_id(record) if "messageId" in record else copy.deepcopy(dict(record))
        play([again], driver, draws.again(), played)
        played_late.append(
            f"{key(record)} {late_span(delay)} after the run began ({removed} expired items removed)"
        )
    return played_late


def played_window(records: Sequence[Record], window: timedelta | None) -> timedelta:
    """`window` (None: the inbox's default retention, `Retention.completed`, 7 days, which
    must cover a redelivery), or a DynamoDB stream's retention if shorter."""
    if window is None:
        # Here, not at the top: the benchmarks load the kit beside other versions of the
        # library (`--library`).
        from lambda_inbox import Retention

        window = Retention().completed
    return min(window, STREAM_RETENTION) if "dynamodb" in records[0] else window
