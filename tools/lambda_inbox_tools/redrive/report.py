"""The counts of one redrive, client-side or SQS's move task, and its progress callback."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .dead_letters import Preview


@dataclass
class MoveReport:
    """Counts of one redrive. `moved` are in the destination and gone from the source, except
    `not_deleted` of them, which a rerun moves again (a duplicate the inbox absorbs)."""

    mode: str
    moved: int = 0
    skipped: int = 0
    failed: int = 0
    not_deleted: int = 0
    interrupted: bool = False
    dry_run: bool = False
    status: str | None = None
    to_move: int | None = None
    would_move: list[Preview] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def handled(self) -> int:
        return self.moved + self.skipped + self.failed + len(self.would_move)

    @property
    def ok(self) -> bool:
        return not self.interrupted and self.failed == 0 and self.status in (None, "COMPLETED")

    def note_error(self, text: str) -> None:
        if len(self.errors) < 10 and text not in self.errors:
            self.errors.append(text)

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "mode": self.mode,
            "dry_run": self.dry_run,
            "moved": self.moved,
            "skipped": self.skipped,
            "failed": self.failed,
            "not_deleted": self.not_deleted,
            "interrupted": self.interrupted,
            "errors": list(self.errors),
        }
        if self.dry_run:
            doc["would_move"] = [preview.document() for preview in self.would_move]
        if self.mode == "native":
            doc["status"] = self.status
            doc["to_move"] = self.to_move
        return doc


ProgressCallback = Callable[[MoveReport], None]
