"""Instructions a run of the effectively-once check spends on its late redeliveries
(tools/lambda_inbox_tools/testing/check/late.py): deterministic.

    .venv/bin/python benchmarks/check_late_instructions.py [--seeds N]

Runs the zoo's transactional inbox (devkit.zoo, 8 messages on devkit's memory DynamoDB) through
the check for seeds 0..N-1 on each of the five sources, in a fresh interpreter under valgrind's
callgrind, counting only the runs (`devkit.callgrind.count_window`: one warm-up run and the
imports left out); once as the check is, once with `play_late` playing nothing. The difference
is what the late deliveries cost: the clock moved on, the TTL tables read and swept, two
invocations more.
"""

from __future__ import annotations

import argparse
import os
import sys

from devkit.callgrind import count_window, require_valgrind
from devkit.paths import REPO_ROOT

_PROGRAM = """
import os, sys
from devkit.zoo import CONTROLS, SOURCES, verdict
import lambda_inbox_tools.testing.effectively_once as checked
if {without_late}:
    checked.play_late = lambda *args, **kwargs: []
inbox = CONTROLS["transactional inbox"]
assert verdict(inbox, "sqs", 99) is None  # warm-up: lazy imports, the shared ledger
os.getppid()
for source in SOURCES:
    for seed in range({seeds}):
        assert verdict(inbox, source, seed) is None
os.getppid()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=4)
    seeds = parser.parse_args().seeds
    require_valgrind()
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    counts = {
        late: count_window(
            [sys.executable, "-c", _PROGRAM.format(without_late=not late, seeds=seeds)],
            env=env,
            cwd=str(REPO_ROOT),
        )
        for late in (True, False)
    }
    runs = 5 * seeds
    with_late, without = counts[True] / runs / 1e6, counts[False] / runs / 1e6
    print(
        f"{runs} runs: {with_late:.1f} M instructions a run with the late redeliveries, "
        f"{without:.1f} M without ({with_late - without:+.1f} M)"
    )


if __name__ == "__main__":
    main()
