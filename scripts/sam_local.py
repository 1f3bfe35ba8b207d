"""`make sam-local`: the functions of template.yaml in containers with the real SAM CLI, offline.

The steps are devkit.sam_local's (its docstring says what each does). Exit status 0 when every
check passed, 1 otherwise.

Usage: make sam-local   (or .venv/bin/python scripts/sam_local.py --help)
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from devkit.sam_local.phases import run_all
from devkit.sam_local.processes import Clock, Processes
from devkit.sam_local.settings import DEFAULT_IMAGE, SamLocalError
from lambda_inbox_tools.services.offline import use_offline_aws


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run the template's functions in containers with `sam local`, offline, and "
        "check what they did.",
    )
    parser.add_argument(
        "--image",
        default=os.environ.get("LAMBDA_IMAGE", DEFAULT_IMAGE),
        help=f"local Lambda image to build (once) and invoke with (default {DEFAULT_IMAGE})",
    )
    parser.add_argument(
        "--pull-images",
        action="store_true",
        help="use the official Lambda images, pulled by SAM CLI (needs registry access; Linux "
        "hosts, where containers reach the host at the docker0 address); no local image is built",
    )
    parser.add_argument(
        "--phase",
        choices=("all", "invoke", "start-lambda"),
        default="all",
        help="run both phases (default), only `sam local invoke` or only `start-lambda`",
    )
    parser.add_argument(
        "--messages",
        type=int,
        default=20,
        help="orders and payments the demo workload publishes through start-lambda (default 20)",
    )
    return parser.parse_args(argv)


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # This process only talks to local endpoints: fake credentials, no profile, no ~/.aws files.
    # SAM CLI gets no AWS settings at all (sam_environment).
    use_offline_aws()
    signal.signal(signal.SIGTERM, _exit_on_signal)
    clock = Clock()
    processes = Processes()
    status = 1
    try:
        run_all(args, clock, processes)
        status = 0
    except SamLocalError as error:
        print(f"\nsam-local: FAILED: {error}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("\nsam-local: interrupted", file=sys.stderr, flush=True)
        status = 130
    finally:
        if processes.running:
            with clock.step("stop what this run started"):
                processes.stop_all()
        clock.summary()
    print(f"\nsam-local: {'OK' if status == 0 else 'FAILED'}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
