"""What a replay run did: every failure record it received and what became of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def counted(n: int, noun: str) -> str:
    """`1 record`, `2 records`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass
class Kept:
    """A failure record left where it was, and why (`filtered`: by --topic / --partition, not a
    problem)."""

    origin: str
    reason: str
    filtered: bool = False


@dataclass
class ReplayReport:
    dry_run: bool = False
    #: Failure records received (SQS messages, S3 objects), whatever became of them.
    received: int = 0
    #: Records whose every batch was replayed whole (deleted from an SQS destination).
    replayed: int = 0
    kept: list[Kept] = field(default_factory=list)
    batches: int = 0
    sent: int = 0
    would_send: int = 0
    #: Records of the source queue hidden by another reader when the run ended.
    in_flight: int = 0
    interrupted: bool = False
    #: Received and not looked at (the run was stopped): visible again for the next run.
    untouched: int = 0

    @property
    def problems(self) -> list[Kept]:
        return [k for k in self.kept if not k.filtered]

    @property
    def filtered(self) -> int:
        return sum(1 for k in self.kept if k.filtered)

    @property
    def ok(self) -> bool:
        """Nothing left to do: every record received was replayed or deliberately filtered."""
        return not (self.problems or self.interrupted or self.in_flight or self.untouched)

    def document(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "received": self.received,
            "replayed": self.replayed,
            "kept": [
                {"origin": k.origin, "reason": k.reason, "filtered": k.filtered} for k in self.kept
            ],
            "filtered_out": self.filtered,
            "batches": self.batches,
            "sent": self.sent,
            "would_send": self.would_send,
            "in_flight_elsewhere": self.in_flight,
            "untouched": self.untouched,
            "interrupted": self.interrupted,
            "ok": self.ok,
        }

    def summary(self) -> str:
        sent = (
            f"would send {counted(self.would_send, 'message')}"
            if self.dry_run
            else f"sent {counted(self.sent, 'message')}"
        )
        verb = "would be replayed" if self.dry_run else "replayed"
        kept = len(self.problems)
        parts = [f"{self.replayed} {verb}", f"{kept} kept" + (" (see above)" if kept else "")]
        if self.filtered:
            parts.append(f"{self.filtered} filtered out")
        if self.untouched:
            parts.append(f"{self.untouched} not looked at")
        received = counted(self.received, "failure record")
        text = f"{received} received: {', '.join(parts)}; {sent}"
        if self.in_flight:
            text += f"; {self.in_flight} more in flight elsewhere"
        return text
