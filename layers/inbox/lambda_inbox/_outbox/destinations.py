"""Where an outbox message goes, by kind: an SQS queue (its URL), an SNS topic (its ARN) or an
EventBridge event bus (its ARN, or its name).

`OutboxRelay(destinations={...})` maps names to such targets, so the consumers that write
outbox items need none of their own. An item's destination is looked up there first; else it is
used as it is when it is a queue URL or an ARN. A bare name is a bus only as a *target* of the
mapping: a bare item destination the mapping does not know is an error, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["Destination", "DestinationKind", "destination_of", "resolve"]

DestinationKind = Literal["sqs", "sns", "eventbridge"]
KINDS: tuple[DestinationKind, ...] = ("sqs", "sns", "eventbridge")


@dataclass(frozen=True, slots=True)
class Destination:
    """A target of one kind: `target` is the queue URL, topic ARN, or bus name or ARN."""

    kind: DestinationKind
    target: str

    @property
    def fifo(self) -> bool:
        """A FIFO queue or topic (its name ends in `.fifo`)."""
        return self.kind != "eventbridge" and self.target.endswith(".fifo")


def destination_of(target: str) -> Destination:
    """The destination `target` names; ValueError for an ARN of another kind of resource
    (an SQS queue's ARN included: SQS sends to its URL)."""
    if target.startswith(("https://", "http://")):
        return Destination("sqs", target)
    if target.startswith("arn:"):
        parts = target.split(":", 5)
        service = parts[2] if len(parts) == 6 else ""
        if service == "sns":
            return Destination("sns", target)
        if service == "events" and parts[5].startswith("event-bus/"):
            return Destination("eventbridge", target)
        raise ValueError(
            f"{target!r} is neither an SNS topic ARN nor an EventBridge event bus ARN "
            "(an SQS queue is named by its URL)"
        )
    if not target or "/" in target or ":" in target:
        raise ValueError(f"{target!r} is no queue URL, topic ARN, or event bus name or ARN")
    return Destination("eventbridge", target)


def resolve(destination: str, mapping: Mapping[str, str]) -> Destination:
    """The destination of an item's `destination`: its target in `mapping`, else itself when
    it is a URL or an ARN. ValueError for a name the mapping does not hold, or a bad target."""
    target = mapping.get(destination)
    if target is None:
        if not destination.startswith(("https://", "http://", "arn:")):
            raise ValueError(f"outbox destination {destination!r} is not mapped by the relay")
        target = destination
    return destination_of(target)
