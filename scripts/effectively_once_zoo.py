"""The effectively-once check against the zoo (devkit.zoo): for each broken consumer and each
control, on SQS standard, SQS FIFO, Kafka, Kinesis and DynamoDB Streams (where it is played),
how many seeds it was caught or passed, then per seed how many broken consumers were caught and
escaped and how many controls were reported (false alarms).

    .venv/bin/python scripts/effectively_once_zoo.py [--seeds 50] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from devkit.zoo import BROKEN, CONTROLS, Row, table


def _by_consumer(rows: list[Row], seeds: int) -> None:
    print(f"| consumer | source | caught (of {seeds}) | passed (of {seeds}) | how it was said |")
    print("| --- | --- | ---: | ---: | --- |")
    for row in rows:
        said = Counter(found for found in row.said.values() if found)
        how = ", ".join(f"{finding} {n}" for finding, n in said.most_common())
        kind = " (control)" if row.control else ""
        caught = sum(said.values())
        print(f"| {row.name}{kind} | {row.source} | {caught} | {seeds - caught} | {how} |")


def _by_seed(rows: list[Row], seeds: range) -> None:
    broken = [row for row in rows if not row.control]
    controls = [row for row in rows if row.control]
    print(
        f"\n| seed | broken caught (of {len(broken)}) | escaped | "
        f"controls reported (of {len(controls)}) |"
    )
    print("| ---: | ---: | ---: | ---: |")
    for seed in seeds:
        caught = sum(1 for row in broken if row.said[seed] is not None)
        alarms = sum(1 for row in controls if row.said[seed] is not None)
        print(f"| {seed} | {caught} | {len(broken) - caught} | {alarms} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument(
        "--only",
        action="append",
        choices=[*BROKEN, *CONTROLS],
        metavar="NAME",
        help="play only this consumer of devkit.zoo's BROKEN or CONTROLS (repeatable)",
    )
    arguments = parser.parse_args()
    seeds = range(arguments.seeds)
    started, cpu = time.monotonic(), time.process_time()
    rows = table(seeds, only=arguments.only)
    _by_consumer(rows, len(seeds))
    _by_seed(rows, seeds)
    wrong = [(row.name, row.source, row.wrong) for row in rows if row.wrong]
    print(f"\nwrong verdicts: {wrong or 'none'}")
    print(
        f"{len(seeds) * len(rows)} runs in {time.monotonic() - started:.1f} s "
        f"({time.process_time() - cpu:.1f} CPU-s)"
    )


if __name__ == "__main__":
    main()
