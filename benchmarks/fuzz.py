"""Long fuzzing runs of `handle()` (the properties of tests/unit/consumer/test_fuzz_events.py, which the
suite runs at 500 examples per event source).

.venv/bin/python benchmarks/fuzz.py [--examples 2000] [--moto-examples 10] [-k kafka]
"""

from __future__ import annotations

import argparse
import os
import sys

import pytest

from devkit.paths import REPO_ROOT


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--examples", type=int, default=2000, help="per source, in memory")
    parser.add_argument("--moto-examples", type=int, default=10, help="per source, on moto")
    parser.add_argument("-k", dest="keyword", default=None, help="pytest -k, e.g. kafka or fifo")
    args = parser.parse_args()
    os.environ["INBOX_FUZZ_EXAMPLES"] = str(args.examples)
    os.environ["INBOX_FUZZ_MOTO_EXAMPLES"] = str(args.moto_examples)
    options = ["-q", "-p", "no:cacheprovider", "--durations=0", "-o", "addopts="]
    options += ["--import-mode=importlib", "-o", "timeout=0"]
    if args.keyword:
        options += ["-k", args.keyword]
    os.chdir(REPO_ROOT)
    return int(pytest.main([*options, "tests/unit/consumer/test_fuzz_events.py"]))


if __name__ == "__main__":
    sys.exit(main())
