"""Load one of this repository's functions (`functions/<name>/app.py`) as a fresh, uniquely
named module (with the local stack's loader, `lambda_inbox_tools.local.invoker.import_fresh`),
and run an event through a consumer. Redelivering until acknowledged and concurrent invocations
are the kit's (`lambda_inbox_tools.testing.delivery`), re-exported here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from devkit.paths import FUNCTIONS_DIR
from lambda_inbox import InboxConsumer, MessageResult
from lambda_inbox._sources import detect
from lambda_inbox_tools.local.invoker import import_fresh
from lambda_inbox_tools.testing.delivery import (
    Handler,
    deliver_until_acknowledged,
    run_concurrently,
)

__all__ = [
    "Handler",
    "deliver_until_acknowledged",
    "function_dir",
    "load_function",
    "process",
    "run_concurrently",
]


def function_dir(name: str) -> Path:
    """The source folder of function `name` (e.g. "order_events")."""
    return FUNCTIONS_DIR / name


def load_function(name: str) -> ModuleType:
    """Import `functions/<name>/app.py` freshly (the local stack's loader) and return the module."""
    path = function_dir(name).resolve() / "app.py"
    if not path.is_file():
        raise FileNotFoundError(f"no handler module at {path}")
    return import_fresh(path, label=name)


def process(
    consumer: InboxConsumer[Any], event: Mapping[str, Any], context: Any = None
) -> list[MessageResult]:
    """Run one Lambda event (Kafka, else SQS) through `consumer.process`: the outcome of every
    message, where `consumer.handle` only answers the partial batch response. Records are read by
    the consumer's own sources (its FIFO failure mode, its Kafka value formats)."""
    return consumer.process(detect(event, consumer.sources).messages(event), context)
