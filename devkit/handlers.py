"""Load a Lambda function's `app.py` as a fresh, uniquely named module (with the local stack's
loader, `lambda_inbox_tools.local.invoker.import_fresh`), and drive functions: run an event through a
consumer, redeliver what a handler reports until it reports nothing, run invocations
concurrently."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from devkit.events import redelivery
from devkit.paths import FUNCTIONS_DIR
from lambda_inbox import InboxConsumer, MessageResult
from lambda_inbox.kafka import is_kafka_event, parse_kafka_event
from lambda_inbox.sqs import parse_sqs_event
from lambda_inbox_tools.local.invoker import import_fresh

T = TypeVar("T")
#: A Lambda handler: `handler(event, context)`.
Handler = Callable[[dict[str, Any], Any], Mapping[str, Any]]


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
    message, where `consumer.handle` only answers the partial batch response. SQS records are
    parsed with the consumer's own FIFO failure mode."""
    if is_kafka_event(event):
        return consumer.process(parse_kafka_event(event), context)
    mode = consumer.config.fifo_failure_mode
    return consumer.process(parse_sqs_event(event, fifo_failure_mode=mode), context)


def deliver_until_acknowledged(
    handler: Handler, event: Mapping[str, Any], *, max_deliveries: int = 30
) -> int:
    """Invoke `handler` with `event`, then with what the event source would redeliver after each
    response (`devkit.events.redelivery`), until a response reports nothing. Returns the number
    of deliveries; AssertionError when records still fail after `max_deliveries`."""
    pending: Mapping[str, Any] | None = event
    deliveries = 0
    while pending is not None:
        deliveries += 1
        assert deliveries <= max_deliveries, f"still failing after {max_deliveries} deliveries"
        pending = redelivery(pending, handler(dict(pending), None))
    return deliveries


def run_concurrently(calls: Sequence[Callable[[], T]], *, timeout: float = 120) -> list[T]:
    """Run each call in a thread of its own, all released at once (as concurrent Lambda
    invocations), and return their results in order. An exception in a thread is raised here;
    so is a thread still running after `timeout` seconds."""
    start = threading.Barrier(len(calls))
    results: dict[int, T] = {}
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            start.wait(timeout=30)
            results[index] = calls[index]()
        except BaseException as error:  # raised again by the calling thread
            errors.append(error)

    threads = [
        threading.Thread(target=run, args=(index,), name=f"invocation-{index}")
        for index in range(len(calls))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    if errors:
        raise errors[0]
    if any(thread.is_alive() for thread in threads):
        raise TimeoutError(f"invocations still running after {timeout} s")
    return [results[index] for index in range(len(calls))]
