"""tier-projection: customers per loyalty tier, kept from the points table's stream.

Each `POINTS` item change moves a customer from the tier of its old points to the tier of its
new ones: the count of one goes down, the other's up, in the transaction of the record's inbox
entry, so a change redelivered by the stream (a retried batch, a rewind) is counted once. The
key is the stream record's `eventID`, the same on every delivery of the change, and on its
replay through the replay queue (`lambda-inbox replay --stream-records` carries it).
"""

import os
from decimal import Decimal
from typing import Any

from pydantic import BaseModel

from lambda_inbox import InboxConsumer, UnitOfWork

TIERS_TABLE = os.environ["TIERS_TABLE"]
#: The lowest points of each tier, highest first.
TIERS = (("gold", 1000), ("silver", 100), ("bronze", 0))


class PointsChange(BaseModel):
    """A stream record's document (the inbox reads it: eventName, Keys, NewImage, OldImage)."""

    eventName: str  # the stream record's own names
    NewImage: dict[str, Any] | None = None
    OldImage: dict[str, Any] | None = None


def tier(image: dict[str, Any] | None) -> str | None:
    if image is None:
        return None
    points = Decimal(image.get("points", 0))
    return next(name for name, lowest in TIERS if points >= lowest)


def project(change: PointsChange, uow: UnitOfWork) -> None:
    before, after = tier(change.OldImage), tier(change.NewImage)
    if before == after:
        return  # points moved within a tier: nothing to count (the inbox still records it)
    for name, delta in ((before, -1), (after, 1)):
        if name is not None:
            uow.update(
                TIERS_TABLE,
                {"pk": "TIERS", "sk": f"TIER#{name}"},
                "ADD customers :delta",
                values={":delta": delta},
            )


consumer = InboxConsumer("tier-projection", model=PointsChange, decide=project)


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return consumer.handle(event, context)  # the stream, or SQS for replays
