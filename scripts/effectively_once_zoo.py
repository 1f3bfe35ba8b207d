"""The effectively-once check against the zoo of broken consumers (devkit.zoo): how many seeds
of 0-49 it catches each, on SQS standard, SQS FIFO, Kafka, Kinesis and DynamoDB Streams, and
the controls that must pass.

    .venv/bin/python scripts/effectively_once_zoo.py [--seeds 50]
"""

from __future__ import annotations

import argparse
import time

from devkit.zoo import CONTROLS, SOURCES, table, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=50)
    seeds = range(parser.parse_args().seeds)
    started = time.monotonic()
    print(f"| consumer | source | seeds caught (of {len(seeds)}) | how |")
    print("| --- | --- | ---: | --- |")
    rows = table(seeds)
    for name, source, caught, said in rows:
        how = ", ".join(f"{finding} {n}" for finding, n in said.most_common())
        print(f"| {name} | {source} | {caught} | {how} |")
    for name, control in CONTROLS.items():
        for source in SOURCES:
            failed = [seed for seed in seeds if verdict(control, source, seed)]
            passed = len(seeds) - len(failed)
            print(f"| {name} (control) | {source} | {len(failed)} | passes {passed} |")
    runs = len(seeds) * (len(rows) + len(CONTROLS) * len(SOURCES))
    print(f"\n{runs} runs in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
