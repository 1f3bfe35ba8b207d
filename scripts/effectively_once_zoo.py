"""The effectively-once check against the zoo of broken consumers (devkit.zoo): how many seeds
of 0-49 it catches each, on SQS standard, SQS FIFO, Kafka, Kinesis and DynamoDB Streams (the SNS
consumers on a standard queue an SNS topic feeds), and the controls that must pass.

    .venv/bin/python scripts/effectively_once_zoo.py [--seeds 50] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import time

from devkit.zoo import BROKEN, CONTROLS, sources, table, verdict


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
    chosen = set(arguments.only or [*BROKEN, *CONTROLS])
    started = time.monotonic()
    print(f"| consumer | source | seeds caught (of {len(seeds)}) | how |")
    print("| --- | --- | ---: | --- |")
    rows = table(seeds, only=chosen)
    for name, source, caught, said in rows:
        how = ", ".join(f"{finding} {n}" for finding, n in said.most_common())
        print(f"| {name} | {source} | {caught} | {how} |")
    runs = len(seeds) * len(rows)
    for name, control in CONTROLS.items():
        if name not in chosen:
            continue
        for source in sources(name):
            failed = [seed for seed in seeds if verdict(control, source, seed)]
            passed = len(seeds) - len(failed)
            print(f"| {name} (control) | {source} | {len(failed)} | passes {passed} |")
            runs += len(seeds)
    print(f"\n{runs} runs in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
