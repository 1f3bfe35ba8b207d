"""Order, judged on the responses: on a FIFO queue, a message acknowledged after an earlier
message of its group failed in the same batch is a violation. SQS deletes what a partial batch
response does not report, so the later message is gone for good while the failed one comes
back: the group's effects happen out of order (AWS: a FIFO consumer stops at the first failure
and reports it and every message after it).

On Kafka and the streams no response can do that: Lambda delivers a partition or shard again
from its first reported failure, whatever the response says of the records after it. A
consumer that applies those records before the failed one reorders its effects all the same;
the check sees that only where `effects()` encodes order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

__all__ = ["acknowledged_after_a_failure"]

Record = Mapping[str, Any]


def acknowledged_after_a_failure(
    batch: Sequence[Record],
    acknowledged: Collection[str],
    lane: Callable[[Record], str],
    delivery: Callable[[Record], str],
) -> list[str]:
    """ "LANE: LATER after FAILED" for each message of `batch` acknowledged after an earlier
    message of its lane (FIFO group) was not."""
    failed: dict[str, str] = {}
    violations: list[str] = []
    for record in batch:
        name, identifier = lane(record), delivery(record)
        if identifier not in acknowledged:
            failed.setdefault(name, identifier)
        elif name in failed:
            violations.append(f"{name}: {identifier} after {failed[name]}")
    return violations
