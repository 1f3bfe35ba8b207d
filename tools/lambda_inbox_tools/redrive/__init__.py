"""Replaying dead letters (no command-line code here: `lambda-inbox redrive` and the local stack's
demo both call this API). `Mover` is the client-side mover with filters and limits;
`start_move_task` / `follow_move_task` drive SQS's own move task."""

from .move_task import NATIVE_MAX_RATE, NativeMoveUnsupported, follow_move_task, start_move_task
from .mover import Mover
from .report import MoveReport
from .where import Where

__all__ = [
    "NATIVE_MAX_RATE",
    "MoveReport",
    "Mover",
    "NativeMoveUnsupported",
    "Where",
    "follow_move_task",
    "start_move_task",
]
