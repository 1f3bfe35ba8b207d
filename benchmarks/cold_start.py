"""Cold start: what importing a handler module (and creating its clients) costs in a fresh interpreter.

    .venv/bin/python benchmarks/cold_start.py [--runs N] [--top K]

Three programs, each run N times in a fresh interpreter, interleaved (the order rotates every
round, so drift on a noisy machine hits all three alike):

- floor:      `import boto3, pydantic; boto3.client("dynamodb")`;
- inbox:      `functions/order_events/app.py` imported as Lambda does (its folder and the layer on
              sys.path), with INBOX_TABLE, DOMAIN_TABLE and DEAD_LETTER_QUEUE_URL set, so it
              creates its DynamoDB and SQS clients at import, as in production;
- inbox-no-dlq: diagnostic only, the same without DEAD_LETTER_QUEUE_URL (no SQS client);
- powertools: `benchmarks/reference_powertools_consumer.py` (Logger, Metrics, idempotency with
              DynamoDBPersistenceLayer, BatchProcessor, parser), creating its clients at import.

Three clocks: "init CPU" is the CPU time of the child from its first statement to the end of
the import (the least sensitive to other processes on a shared machine); "init" is measured inside the child from its first statement to the end of the
import (what Lambda's INIT phase adds on top of the runtime start); "wall" is the parent's time
for the whole child process. Overhead = median(program) - median(floor); the design target is
inbox overhead <= 25% of the Powertools reference overhead. Then `python -X importtime` lists
the modules the inbox handler imports on top of the floor, by cumulative import time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000",
    "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324",
    "INBOX_TABLE": "inbox",
    "DOMAIN_TABLE": "domain",
    "IDEMPOTENCY_TABLE": "idempotency",
    "DEAD_LETTER_QUEUE_URL": "http://127.0.0.1:9324/123456789012/dlq",
    "POWERTOOLS_SERVICE_NAME": "cold-start",
    "POWERTOOLS_METRICS_NAMESPACE": "ColdStart",
}

_TIMED = """\
import time as _t
_start, _cpu = _t.perf_counter(), _t.process_time()
{body}
print(_t.perf_counter() - _start, _t.process_time() - _cpu)
"""

PROGRAMS = {
    "floor": 'import boto3, pydantic\nboto3.client("dynamodb")',
    "inbox": (
        "import sys\n"
        f"sys.path[:0] = [{str(REPO / 'functions' / 'order_events')!r}, "
        f"{str(REPO / 'layers' / 'inbox')!r}]\n"
        "import app"
    ),
    # Diagnostic, not part of the target: the same handler without a dead-letter queue URL, so
    # it creates no SQS client (shows what the SQS client costs at cold start).
    "inbox-no-dlq": (
        "import os, sys\n"
        'os.environ.pop("DEAD_LETTER_QUEUE_URL")\n'
        f"sys.path[:0] = [{str(REPO / 'functions' / 'order_events')!r}, "
        f"{str(REPO / 'layers' / 'inbox')!r}]\n"
        "import app"
    ),
    "powertools": (
        f"import sys\nsys.path[:0] = [{str(REPO / 'benchmarks')!r}]\n"
        "import reference_powertools_consumer"
    ),
}


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.pop("PYTHONPATH", None)
    env.update(ENV)
    return env


def run_once(name: str) -> tuple[float, float, float]:
    """(init seconds and init CPU seconds measured in the child, wall seconds of the process)."""
    started = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-c", _TIMED.format(body=PROGRAMS[name])],
        env=child_env(),
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{name} failed:\n{done.stderr}")
    init, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(init), wall, float(cpu)


def import_times(name: str) -> dict[str, tuple[int, int]]:
    """Module -> (self us, cumulative us) from `python -X importtime`."""
    done = subprocess.run(
        [PYTHON, "-X", "importtime", "-c", PROGRAMS[name]],
        env=child_env(),
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    out: dict[str, tuple[int, int]] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "[us]" in line:
            continue
        self_us, cumulative_us, module = line.removeprefix("import time:").split("|")
        out[module.strip()] = (int(self_us), int(cumulative_us))
    return out


def top_level_extra(name: str, floor: dict[str, tuple[int, int]], top: int) -> list[str]:
    """Modules imported by `name` but not by the floor, by cumulative import time (one sample)."""
    times = import_times(name)
    extra = {m: t for m, t in times.items() if m not in floor}
    rows = sorted(extra.items(), key=lambda item: item[1][1], reverse=True)[:top]
    total_self = sum(t[0] for t in extra.values()) / 1000
    lines = [
        f"{name}: {len(extra)} modules beyond the floor, {total_self:.0f} ms self time in total "
        "(one -X importtime sample)",
        "",
        "| module | cumulative ms | self ms |",
        "|---|---:|---:|",
    ]
    lines += [f"| {m} | {c / 1000:.1f} | {s / 1000:.1f} |" for m, (s, c) in rows]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="fresh interpreters per program")
    parser.add_argument("--top", type=int, default=15, help="modules listed per program")
    args = parser.parse_args()

    names = list(PROGRAMS)
    for name in names:  # warm the OS page cache and .pyc files once, unmeasured
        run_once(name)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for round_number in range(args.runs):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(run_once(name))

    init = {n: statistics.median(s[0] for s in samples[n]) * 1000 for n in names}
    wall = {n: statistics.median(s[1] for s in samples[n]) * 1000 for n in names}
    over_init = {n: init[n] - init["floor"] for n in names}
    over_wall = {n: wall[n] - wall["floor"] for n in names}
    cpu = {n: statistics.median(s[2] for s in samples[n]) * 1000 for n in names}
    over_cpu = {n: cpu[n] - cpu["floor"] for n in names}

    print(
        f"Fresh interpreters: {args.runs} per program, interleaved; medians; "
        f"Python {sys.version.split()[0]}."
    )
    print()
    print(
        "| program | init CPU ms (in child) | over floor | init ms (in child) | over floor "
        "| wall ms (process) | over floor |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for n in names:
        print(
            f"| {n} | {cpu[n]:.1f} | {over_cpu[n]:+.1f} | {init[n]:.1f} | {over_init[n]:+.1f} "
            f"| {wall[n]:.1f} | {over_wall[n]:+.1f} |"
        )
    print()
    for clock, over in (("init CPU", over_cpu), ("init", over_init), ("wall", over_wall)):
        share = over["inbox"] / over["powertools"] * 100 if over["powertools"] > 0 else float("nan")
        verdict = "met" if share <= 25 else "not met"
        print(
            f"inbox overhead / powertools overhead ({clock}): {over['inbox']:.1f} / "
            f"{over['powertools']:.1f} ms = {share:.0f}% (target <= 25%: {verdict})"
        )
    print()
    floor = import_times("floor")
    for name in ("inbox", "powertools"):
        print("\n".join(top_level_extra(name, floor, args.top)))
        print()


if __name__ == "__main__":
    main()
