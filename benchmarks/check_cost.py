"""What the effectively-once check costs a consumer's test suite: runs per CPU-second, and
instructions a run, on correct consumers (what a team's test runs, and passes).

    .venv/bin/python benchmarks/check_cost.py [--seeds N] [--instructions] [--checkout DIR ...]

The consumers are the zoo's transactional inbox (devkit.zoo, 8 messages on devkit's memory
DynamoDB, batches of 4) and the same inbox deployed with `ReportBatchItemFailures` and
`BatchSize: 10`, on each of the five sources, seeds 0..N-1. Each checkout (`--checkout DIR`: a
repository root, such as an exported earlier revision; this one unless given) runs in a fresh
interpreter with that checkout's kit, devkit and library first on its path, so the rows of one
run compare versions side by side. CPU-seconds are the process's (`time.process_time()`, every
thread), after a warm-up run; `--instructions` counts the same runs under callgrind
(`devkit.callgrind.count_window`: deterministic, whatever else the machine does).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from devkit.callgrind import count_window, require_valgrind
from devkit.paths import REPO_ROOT

_PROGRAM = """
import os, sys, time
from devkit.zoo import SOURCES, transactional_inbox, verdict
from devkit.zoo_mapping import deployed

def templated(ledger):
    return deployed(
        transactional_inbox(ledger), BatchSize=10, FunctionResponseTypes=["ReportBatchItemFailures"]
    )

consumers = (transactional_inbox, templated)
assert verdict(transactional_inbox, "sqs", 99) is None  # warm-up: lazy imports, the ledger
runs = 0
os.getppid()
started = time.process_time()
for consumer in consumers:
    for source in SOURCES:
        for seed in range({seeds}):
            assert verdict(consumer, source, seed) is None, (consumer, source, seed)
            runs += 1
spent = time.process_time() - started
os.getppid()
print(runs, spent)
"""


def _environment(checkout: Path) -> dict[str, str]:
    """The environment that puts `checkout`'s kit, library and devkit first on the path."""
    paths = [checkout, checkout / "tools", checkout / "layers" / "inbox"]
    return dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(str(p) for p in paths),
        ZOO_SEEDS="1",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--checkout", action="append", type=Path)
    args = parser.parse_args()
    checkouts = list(args.checkout or [REPO_ROOT])
    if args.instructions:
        require_valgrind()
    program = _PROGRAM.format(seeds=args.seeds)
    for checkout in checkouts:
        env = _environment(checkout.resolve())
        done = subprocess.run(
            [sys.executable, "-c", program],
            env=env,
            cwd=str(checkout),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            sys.exit(f"{checkout}: the runs failed:\n{done.stderr[-3000:]}")
        runs_text, spent_text = done.stdout.split()[-2:]
        runs, spent = int(runs_text), float(spent_text)
        line = (
            f"{checkout}: {runs} runs in {spent:.1f} CPU-s, "
            f"{runs / spent:.1f} runs per CPU-second ({spent / runs * 1000:.0f} ms a run)"
        )
        if args.instructions:
            counted = count_window([sys.executable, "-c", program], env=env, cwd=str(checkout))
            line += f", {counted / runs / 1e6:.1f} M instructions a run"
        print(line)


if __name__ == "__main__":
    main()
