"""Simple fakes for testing one pipeline stage at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from lambda_inbox import InboundMessage, MessageResult, Outcome, PoisonMessage
from lambda_inbox._report import BatchReport, settled
from lambda_inbox._sources.identity import Delivery
from lambda_inbox._telemetry import Telemetry


@dataclass
class FakeClock:
    """A monotonic clock that only moves when told to (or when slept on)."""

    now: float = 1000.0
    slept: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


class SilentTelemetry:
    """Records what the stages report instead of logging it."""

    def __init__(self) -> None:
        self.done: list[tuple[str, Outcome, str | None]] = []

    def logs_each_message(self) -> bool:
        return True  # every outcome is recorded

    def message_done(
        self, message: InboundMessage, outcome: Outcome, key: str | None, code: str | None, _: str
    ) -> None:
        self.done.append((message.delivery_id, outcome, code))


def report_for(messages: list[InboundMessage]) -> BatchReport:
    return BatchReport(messages, cast(Telemetry, SilentTelemetry()))


class FakeDeadLettering:
    """Takes poison into a list and returns it as dead-lettered."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, bool]] = []

    def dead_letter(
        self, delivery: Delivery, poison: PoisonMessage, *, record_failure: bool = True
    ) -> MessageResult:
        self.sent.append((delivery.key, poison.code, record_failure))
        return settled(delivery, Outcome.DEAD_LETTERED, poison.code, poison.reason)

    #: What waits for the next flush is sent at once here: the result is the same.
    defer = dead_letter


def msg(
    delivery_id: str, sequence: int, *, body: str = "{}", scope: str | None = None, **kw: Any
) -> InboundMessage:
    return InboundMessage(
        item_identifier=delivery_id,
        delivery_id=delivery_id,
        body=body.encode(),
        source="test",
        sequence=sequence,
        ordering_scope=scope,
        **kw,
    )


def delivery(
    delivery_id: str,
    sequence: int,
    *,
    key: str | None = None,
    fingerprint: str = "fp",
    scope: str | None = None,
    poison: PoisonMessage | None = None,
) -> Delivery:
    return Delivery(
        msg(delivery_id, sequence, scope=scope), key or delivery_id, fingerprint, poison
    )
