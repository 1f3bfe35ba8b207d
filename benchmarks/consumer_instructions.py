"""Instructions per 10-message SQS batch of the order handler: its own work, deterministic.

    .venv/bin/python benchmarks/consumer_instructions.py [--batches N] [--library DIR ...]

CPU time per batch on this shared 2-core machine moves by a third between runs, and a process
that waits for DynamoDB Local pays for cold caches after every wake-up, so small changes drown.
This counts instructions instead, under valgrind's callgrind, with the network taken out:
DynamoDB's answers come from a botocore `before-send` hook (`devkit.captured.answer_in_process`:
an empty `BatchGetItem` result, an empty success for the transaction: every message new, every
transaction committed), so what is counted is the handler, the library, boto3 and botocore
building, signing and parsing both requests: everything but the socket and the wait. Each
program makes the events of W + N batches, runs W batches, empties the garbage collector
(`gc.collect()`), then runs the N counted batches between two `os.getppid()` calls, where
callgrind dumps and zeroes its counters (`devkit.callgrind.count_window`): the count is of those
batches alone, both threads, building the events and the interpreter's start left out.

Since 2026-11-27 the window is counted this way. Before, each program ran twice (W and W + N
batches) and the difference was divided by N; the start and the imports (about 2.8 G
instructions) move by up to 18 M from one run to the next, so the count per batch moved by up to
0.5 M over 40 batches: the size of the "bimodal" counts of b250667 (23.7 or 24.1 M), which the
window method no longer shows. The window repeats within about 0.05 M per batch over 60 batches.

The batches' own young collections stay in the count, and where they fall matters. Identical
batches run back to back lock the collector into one rhythm: about two young collections per
batch, and every tenth of them also collects the middle generation, which then holds what the
batch's earlier collection promoted (some 500 objects) or next to nothing, depending on which
collection of the batch it is. An unrelated change of a few objects per batch can move it from
one to the other, about 0.04 M per batch either way (a Lambda's invocations, with the runtime's
own work between them, have no such rhythm). Since 2026-11-27 (the second change of that day)
the counted batches are therefore shared equally among four programs that start from the
collector's phases in PHASES (young collections run before the window) and the count is their
mean; the handler's count from each phase is in the last column.

Full collections come every few hundred
batches (a full one scans the whole heap the imports made, about 30 M instructions here): the
script counts them over 400 batches (no callgrind) and measures one (a window holding only a
`gc.collect()`), and the last columns add their share per batch.

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
    count_window,
    require_valgrind,
)
from devkit.paths import REPO_ROOT

_PROGRAM = r"""
import contextlib, functools, gc, io, os, sys
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
    gc.collect()  # the counted batches start from the same collector state every run
    {window}
    os.getppid()  # the counted window starts (devkit.callgrind.count_window)
    for index in range({warmup}, {batches}):
        run(index)
    {counted}
    os.getppid()  # and ends
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
    counted: str = "",
    after: str = "",
    built: int = 0,
) -> tuple[str, dict[str, str]]:
    """The code and environment of a fresh interpreter running `batches` batches (or floor
    requests), the collector emptied after the first `warmup`, then `window` run; the rest of
    the batches and `counted` are the counted window; `after` at the end. The events of `built`
    batches are made first (at least `batches`), outside the window."""
    code = _PROGRAM.format(
        benchmarks=str(REPO_ROOT / "benchmarks"),
        batches=batches,
        built=max(built, batches),
        warmup=warmup,
        floor=floor,
        window=window or "pass",
        counted=counted or "pass",
        after=after,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON"))}
    env |= _ENV | {"PYTHONPATH": os.pathsep.join([str(library), str(REPO_ROOT)])}
    return code, env


#: The collector's phases the counted batches start from: young collections run before the
#: window (`gc.collect(0)`), each moving where the next collection of the middle generation,
#: one in ten, falls among the batches.
PHASES = (0, 2, 5, 7)


def count(
    batches: int,
    warmup: int,
    library: Path,
    *,
    floor: bool,
    counted: str = "",
    built: int = 0,
    phase: int = 0,
) -> int:
    """Instructions of the counted window of `program(...)`, from collector phase `phase`."""
    window = f"for _ in range({phase}): gc.collect(0)" if phase else ""
    code, env = program(
        batches, warmup, library, floor=floor, window=window, counted=counted, built=built
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True)  # writes the .pyc files
    return count_window([sys.executable, "-c", code], env=env)


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


def per_batch(
    library: Path, warmup: int, batches: int, *, floor: bool = False
) -> tuple[float, list[float]]:
    """Millions of instructions per batch, the mean over the collector's PHASES, each counting
    its share of the batches; and the count per batch of each phase."""
    share = max(1, batches // len(PHASES))
    counts = [
        count(warmup + share, warmup, library, floor=floor, phase=phase) / share / 1e6
        for phase in PHASES
    ]
    return sum(counts) / len(counts), counts


def full_collection(library: Path, warmup: int, built: int) -> float:
    """Millions of instructions of one full collection of the handler's process after `warmup`
    batches, the events of `built` made: a window holding a `gc.collect()` and no batch."""
    return count(warmup, warmup, library, floor=False, counted="gc.collect()", built=built) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=80, help="batches counted (default 80)")
    parser.add_argument(
        "--warmup", type=int, default=10, help="uncounted batches before the window (default 10)"
    )
    add_library_option(parser)
    args = parser.parse_args()
    require_valgrind()
    libraries = chosen_libraries(args)
    print(
        f"Instructions per 10-message batch of new 2-line orders (M), network answered in "
        f"process, {args.batches} batches after {args.warmup}, in equal shares from the "
        f"collector's phases {', '.join(map(str, PHASES))} (young collections before the count); "
        f"Python {sys.version.split()[0]}.\n"
    )
    print(
        "| library | its requests per batch, alone (the floor) | order handler | above the floor "
        "| per message | full collections: one (M), per 100 batches, per batch (M) | above the "
        "floor with them | per message | order handler from each phase |"
        "\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for library in libraries:
        floor, _ = per_batch(library.resolve(), args.warmup, args.batches, floor=True)
        inbox, phases = per_batch(library.resolve(), args.warmup, args.batches)
        above = inbox - floor
        one = full_collection(library.resolve(), args.warmup, args.warmup + args.batches)
        rate = full_collections_per_batch(library.resolve(), args.warmup)
        amortized = one * rate
        print(
            f"| {library} | {floor:.2f} | {inbox:.2f} | {above:.2f} | {above / 10:.3f} "
            f"| {one:.1f}, {rate * 100:.2f}, {amortized:.2f} | {above + amortized:.2f} "
            f"| {(above + amortized) / 10:.3f} | {' / '.join(f'{value:.2f}' for value in phases)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
