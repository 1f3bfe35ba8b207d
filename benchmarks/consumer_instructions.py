"""Instructions per 10-message SQS batch of the order handler: its own work, deterministic.

    .venv/bin/python benchmarks/consumer_instructions.py [--batches N] [--library DIR ...]

CPU time per batch on this shared 2-core machine moves by a third between runs, and a process
that waits for DynamoDB Local pays for cold caches after every wake-up, so small changes drown.
This counts instructions instead, under valgrind's callgrind, with the network taken out:
DynamoDB's answers come from a botocore `before-send` hook (`devkit.captured.answer_in_process`:
an empty `BatchGetItem` result, an empty success for the transaction: every message new, every
transaction committed), so what is counted is the handler, the library, boto3 and botocore
building, signing and parsing both requests: everything but the socket and the wait. Each
program runs twice, with W and W + N batches (same events); the difference divided by N is the
count per batch, within 0.1% on every run.

Programs (each a fresh interpreter):

- `inbox`: `functions/order_events/app.py` on the library in `layers/inbox` (or each
  `--library DIR`, e.g. a git worktree's `layers/inbox`, side by side);
- `floor`: the batch's own requests alone (captured from one batch of the handler on that
  library with `devkit.captured`: the transaction, and the batch read where the library sends
  one), sent through the same client, answered the same way: what no library code can save.

The events, the answers and the order lines are those of `sqs_vs_powertools.py`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from devkit.callgrind import (
    add_library_option,
    chosen_libraries,
    count_instructions,
    require_valgrind,
)
from devkit.paths import REPO_ROOT

_PROGRAM = r"""
import contextlib, functools, io, sys
sys.path[:0] = [{benchmarks!r}]
from devkit.captured import answer_in_process, capture_requests, replay
from devkit.events import sqs_event, sqs_record
from devkit.handlers import load_function
from lambda_inbox_tools.testing.context import FakeLambdaContext
from sqs_vs_powertools import make_orders

app = load_function("order_events")
client = app.consumer.dynamodb
events = [sqs_event(*(sqs_record(body) for body in batch)) for batch in make_orders("b", {batches}, 2)]
context = FakeLambdaContext(function_name="benchmark")
if {floor}:
    with contextlib.redirect_stdout(io.StringIO()):
        requests = capture_requests(client, functools.partial(app.handler, events[0], context))
    client.meta.events.register("before-send.dynamodb", answer_in_process)
    for _ in range({batches}):
        replay(client, requests)
else:
    client.meta.events.register("before-send.dynamodb", answer_in_process)
    with contextlib.redirect_stdout(io.StringIO()):
        for event in events:
            response = app.handler(event, context)
            assert response == {{"batchItemFailures": []}}, response
"""

_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000",
    "INBOX_TABLE": "inbox",
    "DOMAIN_TABLE": "domain",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_SERVICE_NAME": "benchmark",
    "POWERTOOLS_METRICS_NAMESPACE": "Benchmark",
    "AWS_LAMBDA_FUNCTION_NAME": "benchmark",
    "PYTHONHASHSEED": "0",
}


def count(batches: int, library: Path, *, floor: bool) -> int:
    """Instructions of a fresh interpreter running `batches` batches (or floor requests)."""
    code = _PROGRAM.format(benchmarks=str(REPO_ROOT / "benchmarks"), batches=batches, floor=floor)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON"))}
    env |= _ENV | {"PYTHONPATH": os.pathsep.join([str(library), str(REPO_ROOT)])}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)  # writes the .pyc files
    return count_instructions([sys.executable, "-c", code], env=env)


def per_batch(library: Path, warmup: int, batches: int, *, floor: bool = False) -> float:
    """Millions of instructions per batch: the difference of two runs, over the extra batches."""
    extra = count(warmup + batches, library, floor=floor) - count(warmup, library, floor=floor)
    return extra / batches / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=50, help="batches counted (default 50)")
    parser.add_argument("--warmup", type=int, default=10, help="batches in both runs")
    add_library_option(parser)
    args = parser.parse_args()
    require_valgrind()
    libraries = chosen_libraries(args)
    print(
        f"Instructions per 10-message batch of new 2-line orders (M), network answered in "
        f"process, {args.batches} batches after {args.warmup}; Python {sys.version.split()[0]}.\n"
    )
    print(
        "| library | its requests per batch, alone (the floor) | order handler | above the floor "
        "| per message |\n|---|---:|---:|---:|---:|"
    )
    for library in libraries:
        floor = per_batch(library.resolve(), args.warmup, args.batches, floor=True)
        inbox = per_batch(library.resolve(), args.warmup, args.batches)
        above = inbox - floor
        print(
            f"| {library} | {floor:.2f} | {inbox:.2f} | {above:.2f} | {above / 10:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
