"""Instructions per 10-message SQS batch of the order handler: its own work, deterministic.

    .venv/bin/python benchmarks/consumer_instructions.py [--batches N] [--library DIR ...]

CPU time per batch on this shared 2-core machine moves by a third between runs, and a process
that waits for DynamoDB Local pays for cold caches after every wake-up, so small changes drown.
This counts instructions instead, under valgrind's callgrind, with the network taken out:
DynamoDB's answers come from a botocore `before-send` hook (`devkit.captured.answer_in_process`:
an empty `BatchGetItem` result, an empty success for the transaction: every message new, every
transaction committed), so what is counted is the handler, the library, boto3 and botocore
building, signing and parsing both requests: everything but the socket and the wait. Each
program runs twice, with W and W + N batches; both make the events of W + N batches first, so
the difference divided by N is the count per batch, building the events left out (before
2026-11-26 they were made per run, and about 1.2 M per batch of building them was in both the
floor and the handler: the difference above the floor was the same).

Both runs empty the garbage collector after the W batches (`gc.collect()`), so the N batches
are counted from the same collector state. Without that, a full collection (it scans the whole
heap the imports made, about 30 M instructions here) fell inside the counted batches in some
runs and not in others, and moved the count per batch by up to 1 M. The batches' own young
collections stay in the count. Full collections come every few hundred batches: the script
counts them over 400 batches (no callgrind) and measures one (a second `gc.collect()` against
none), and the last columns add their share per batch. Counts repeat within about 1%; compare
rows of one run. One exception, not explained yet: the library at b250667 counts either about
23.7 or about 24.1 M per batch from one run to the next (docs/PERFORMANCE.md, "Five small
cuts"); run it more than once.

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
import functools
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
import contextlib, functools, gc, io, sys
sys.path[:0] = [{benchmarks!r}]
from devkit.captured import answer_in_process, capture_requests, replay
from devkit.events import sqs_event, sqs_record
from devkit.handlers import load_function
from lambda_inbox_tools.testing.context import FakeLambdaContext
from sqs_vs_powertools import make_orders

app = load_function("order_events")
client = app.consumer.dynamodb
events = [sqs_event(*(sqs_record(body) for body in batch)) for batch in make_orders("b", {built}, 2)]
context = FakeLambdaContext(function_name="benchmark")
if {floor}:
    with contextlib.redirect_stdout(io.StringIO()):
        requests = capture_requests(client, functools.partial(app.handler, events[0], context))

    def run(index):
        replay(client, requests)
else:
    def run(index):
        response = app.handler(events[index], context)
        assert response == {{"batchItemFailures": []}}, response
client.meta.events.register("before-send.dynamodb", answer_in_process)
with contextlib.redirect_stdout(io.StringIO()):
    for index in range({warmup}):
        run(index)
    gc.collect()  # the counted batches start from the same collector state in both runs
    {window}
    for index in range({warmup}, {batches}):
        run(index)
{after}"""

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


def program(
    batches: int,
    warmup: int,
    library: Path,
    *,
    floor: bool,
    window: str = "",
    after: str = "",
    built: int = 0,
) -> tuple[str, dict[str, str]]:
    """The code and environment of a fresh interpreter running `batches` batches (or floor
    requests), the collector emptied after the first `warmup`, then `window` run; `after` at
    the end. The events of `built` batches are made first (at least `batches`): both runs of
    `per_batch` make the same number, so building them is no part of the difference."""
    code = _PROGRAM.format(
        benchmarks=str(REPO_ROOT / "benchmarks"),
        batches=batches,
        built=max(built, batches),
        warmup=warmup,
        floor=floor,
        window=window or "pass",
        after=after,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON"))}
    env |= _ENV | {"PYTHONPATH": os.pathsep.join([str(library), str(REPO_ROOT)])}
    return code, env


@functools.cache  # `full_collection` counts the warm-up alone again, as `per_batch` did
def count(
    batches: int, warmup: int, library: Path, *, floor: bool, after: str = "", built: int = 0
) -> int:
    """Instructions of `program(...)`."""
    code, env = program(batches, warmup, library, floor=floor, after=after, built=built)
    subprocess.run([sys.executable, "-c", code], env=env, check=True)  # writes the .pyc files
    return count_instructions([sys.executable, "-c", code], env=env)


def full_collections_per_batch(library: Path, warmup: int, batches: int = 400) -> float:
    """Full collections per batch of the handler, counted (no callgrind) over `batches`."""
    code, env = program(
        warmup + batches,
        warmup,
        library,
        floor=False,
        window="full = []; gc.callbacks.append(lambda phase, info: "
        'full.append(1) if phase == "stop" and info["generation"] == 2 else None)',
        after="print(len(full))",
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    return int(done.stdout.split()[-1]) / batches


def per_batch(library: Path, warmup: int, batches: int, *, floor: bool = False) -> float:
    """Millions of instructions per batch: the difference of two runs, over the extra batches."""
    built = warmup + batches
    extra = count(built, warmup, library, floor=floor) - count(
        warmup, warmup, library, floor=floor, built=built
    )
    return extra / batches / 1e6


def full_collection(library: Path, warmup: int, built: int) -> float:
    """Millions of instructions of one full collection of the handler's process after `warmup`
    batches (a second `gc.collect()` against none), the events of `built` made."""
    once = count(warmup, warmup, library, floor=False, built=built)
    twice = count(warmup, warmup, library, floor=False, after="gc.collect()", built=built)
    return (twice - once) / 1e6


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
        "| per message | full collections: one (M), per 100 batches, per batch (M) | above the "
        "floor with them | per message |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    for library in libraries:
        floor = per_batch(library.resolve(), args.warmup, args.batches, floor=True)
        inbox = per_batch(library.resolve(), args.warmup, args.batches)
        above = inbox - floor
        one = full_collection(library.resolve(), args.warmup, args.warmup + args.batches)
        rate = full_collections_per_batch(library.resolve(), args.warmup)
        amortized = one * rate
        print(
            f"| {library} | {floor:.2f} | {inbox:.2f} | {above:.2f} | {above / 10:.2f} "
            f"| {one:.1f}, {rate * 100:.2f}, {amortized:.2f} | {above + amortized:.2f} "
            f"| {(above + amortized) / 10:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
