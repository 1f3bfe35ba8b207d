"""What hostile records cost: poison at volume, decoding bombs and a Kinesis aggregate of
150,000 user records, next to ordinary traffic; this checkout and, with `--before REV`, the
library as it was at REV, side by side.

    .venv/bin/python benchmarks/hostile_cost.py [--before REV] [--messages 1000]
        [--kpl-users 150000] [--budget-ms 3000]

Each measurement runs in a fresh interpreter (`--child`) with the library under test first on
its path (REV's `layers/inbox`, exported with `git archive`), against DynamoDB and SQS in
memory (`devkit.memory_aws`: real boto3 clients, only the network answered in process). What is
counted at botocore's `before-parameter-build` hook: requests per service and operation, and
write units by DynamoDB's pricing rules (`devkit.meters.computed_wcu`: 1 per KB written alone,
2 per KB and action of a transaction). Time is the child's CPU seconds for the scenario
(`time.process_time`, every thread) and, for the invocations, wall seconds; memory is the peak
resident set above what the interpreter held when the scenario started (Linux's `VmHWM`, reset
through `/proc/self/clear_refs` first), which includes memory Python does not trace (the
Protobuf runtime's) and, in the tables in memory, what was written meanwhile.

- `poison`: `--messages` poison messages (JSON without the key the consumer reads: `missing_key`)
  in batches of 10; `good`: as many valid ones, each a `put` of one domain item (the reference);
- `avro`: one Kafka batch of nine JSON values and the Avro bomb (an array of nulls claiming
  9,990,000 items in 5 bytes); `protobuf`: half a million empty sub-messages in 1 MB; `zlib`: a
  redriven dead letter whose 130 KB inflate to 128 MiB; `batch`: ten ordinary Kafka values, the
  reference;
- `kpl`: one Kinesis record aggregating `--kpl-users` user records (two bytes each: 150,000 in
  1.2 MB), each adding one to a counter, delivered again from its
  sequence number after each partial response (Lambda's retry), each invocation given
  `--budget-ms` on the wall clock, until done (at most 2 invocations before the change, which
  would never be done: each starts over and commits nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("poison", "good", "avro", "protobuf", "zlib", "batch", "kpl")


# ---- the child: one scenario, one library ---------------------------------------------------


def child(scenario: str, options: argparse.Namespace) -> dict[str, Any]:
    from devkit.app_state import AppState
    from devkit.memory_aws import MemoryAws
    from devkit.meters import computed_wcu
    from devkit.resident import peak_above, peak_reset

    memory = MemoryAws()
    aws = AppState.created(memory.client("dynamodb"), memory.client("sqs"))
    requests: Counter[str] = Counter()
    wcu = [0.0]
    counting = [False]

    def count(params: dict[str, Any], model: Any, **_: Any) -> None:
        if counting[0]:
            requests[f"{model.service_model.service_name} {model.name}"] += 1
            wcu[0] += computed_wcu(model.name, params)

    for client in (aws.dynamodb, aws.sqs):
        client.meta.events.register("before-parameter-build", count)
    scenario_of = {"poison": poison, "good": good, "kpl": kpl}.get(scenario, bomb)
    act, inspect = scenario_of(aws, scenario, options)  # made, and warmed up: not measured
    counting[0] = True
    resident = peak_reset()
    cpu, wall = time.process_time(), time.perf_counter()
    act()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = peak_above(resident)
    counting[0] = False
    measured = {"requests": dict(requests), "wcu": wcu[0], "cpu": cpu, "wall": wall}
    return {**measured, "peak_mb": peak, **inspect()}


def put(body: dict[str, Any], uow: Any) -> None:
    uow.put("domain", {"pk": f"ITEM#{body['id']}", "sk": "V"})


def consumer(aws: Any, formats: Any = None) -> Any:
    config = {"value_formats": formats} if formats is not None else {}
    return aws.consumer("hostile", config=config, model=dict, decide=put, key="id")


def batches(messages: int, body: Callable[[int], dict[str, Any]]) -> list[dict[str, Any]]:
    from lambda_inbox_tools.testing.events import sqs_event, sqs_record

    return [
        sqs_event(*(sqs_record(json.dumps(body(n))) for n in range(start, start + 10)))
        for start in range(0, messages, 10)
    ]


Scenario = tuple[Callable[[], object], Callable[[], dict[str, Any]]]


def poison(aws: Any, _: str, options: argparse.Namespace) -> Scenario:
    return traffic(aws, options, lambda n: {"n": n, "note": "no id"})


def good(aws: Any, _: str, options: argparse.Namespace) -> Scenario:
    return traffic(aws, options, lambda n: {"id": f"m-{n}", "note": "fine"})


def traffic(
    aws: Any, options: argparse.Namespace, body: Callable[[int], dict[str, Any]]
) -> Scenario:
    """`--messages` messages made by `body`, in batches of 10, after one batch to warm up."""
    inbox = consumer(aws)
    warm, *events = batches(options.messages + 10, body)
    inbox.handle(warm)

    def act() -> None:
        for event in events:
            assert inbox.handle(event) == {"batchItemFailures": []}

    return act, lambda: {"messages": options.messages}


def bomb(aws: Any, scenario: str, _: argparse.Namespace) -> Scenario:
    """One batch holding the hostile record beside nine ordinary ones, after one such batch
    without it (the decoders loaded, a dead letter sent: warmed up)."""
    from devkit import hostile
    from lambda_inbox import ValueFormats
    from lambda_inbox_tools.testing.events import kafka_event, kafka_record, sqs_event

    def value(offset: int) -> dict[str, Any]:
        return kafka_record(0, offset, json.dumps({"id": f"v-{offset}"}).encode())

    def batch(first: int, last: dict[str, Any] | None) -> dict[str, Any]:
        values = [value(offset) for offset in range(first, first + 9)]
        return kafka_event([*values, last or value(first + 9)])

    if scenario == "zlib":
        inbox = consumer(aws)
        inflating = hostile.zlib_dead_letter(zlib.compress(b'{"id": "z-1"}'), "warm")
        warm = sqs_event(inflating, hostile.zlib_dead_letter(zlib.compress(b"[]"), "list"))
        event = sqs_event(
            hostile.zlib_dead_letter(zlib.compress(b'{"id": "z-2"}'), "ok"),
            hostile.zlib_dead_letter(hostile.zlib_zeros(128 * 1024 * 1024), "bomb"),
        )
    elif scenario == "batch":
        inbox = consumer(aws)
        warm, event = batch(0, kafka_record(0, 9, b"[]")), batch(10, None)
    else:
        avro = scenario == "avro"
        fmt = {"dataFormat": scenario.upper()}
        formats = (
            ValueFormats(avro_schema=hostile.NULLS_SCHEMA)
            if avro
            else ValueFormats(protobuf_message=hostile.holder_class())
        )
        inbox = consumer(aws, formats)
        ordinary = (
            hostile.avro_long(2) + hostile.avro_long(0)
            if avro
            else hostile.holder_class()(id="x").SerializeToString()
        )
        bomb_value = (
            hostile.avro_nulls_bomb(9_990_000) if avro else hostile.protobuf_empties_bomb(500_000)
        )
        warm = batch(0, kafka_record(0, 9, ordinary, value_schema=fmt))
        event = batch(10, kafka_record(0, 19, bomb_value, value_schema=fmt))
    inbox.handle(warm)
    memory_letters(aws)
    warmed = completed(aws)
    responses: list[dict[str, Any]] = []

    def inspect() -> dict[str, Any]:
        letters = memory_letters(aws)
        codes = [
            letter["MessageAttributes"]["inbox-error-code"]["StringValue"] for letter in letters
        ]
        return {
            "reported": len(responses[0]["batchItemFailures"]),
            "dead_lettered": codes,
            "committed": completed(aws) - warmed,
        }

    return lambda: responses.append(inbox.handle(event)), inspect


def completed(aws: Any) -> int:
    return sum(1 for item in aws.scan(aws.inbox) if item.get("status", {}).get("S") == "COMPLETED")


def memory_letters(aws: Any) -> list[Any]:
    from lambda_inbox_tools.services.queues import receive_all

    return receive_all(aws.sqs, aws.dlq_url, delete=True)


def kpl(aws: Any, _: str, options: argparse.Namespace) -> Scenario:
    """The aggregate delivered again after each partial response, until done, after a small
    aggregate to warm up. Each user record adds one to one counter; memory is each invocation's
    peak above where it started, and what it kept (mostly the in-memory tables' new items: the
    inbox records it committed, some 1.5 KB each there)."""
    from devkit.hostile import kpl_bomb
    from devkit.resident import now_above, peak_above, peak_reset
    from lambda_inbox_tools.testing import event_after, kinesis_event
    from lambda_inbox_tools.testing.context import FakeLambdaContext

    def count(_: dict[str, Any], uow: Any) -> None:
        uow.update("domain", {"pk": "COUNTER", "sk": "USERS"}, "ADD total :one", values={":one": 1})

    inbox = aws.consumer("hostile", model=dict, decide=count)
    inbox.handle(kinesis_event([kpl_bomb(10, position=0)]))
    first = kinesis_event([kpl_bomb(options.kpl_users, position=1)])
    invocations: list[tuple[float, float, float]] = []
    limit = 2 if options.before_library else 1_000
    left: list[dict[str, Any] | None] = [first]

    def act() -> None:
        event = first
        while len(invocations) < limit:
            resident, started = peak_reset(), time.perf_counter()
            response = inbox.handle(event, FakeLambdaContext(options.budget_ms))
            seconds = time.perf_counter() - started
            invocations.append((seconds, peak_above(resident), now_above(resident)))
            after = event_after(event, response)
            left[0] = after
            if after is None:
                return
            event = after

    def inspect() -> dict[str, Any]:
        item = aws.item("COUNTER", "USERS")
        return {
            "invocations": len(invocations),
            "done": left[0] is None,
            "applied": int(item["total"]["N"]) - 10 if item else 0,
            "longest_invocation": max(seconds for seconds, _, _ in invocations),
            "invocation_peak_mb": max(peak for _, peak, _ in invocations),
            "kept_mb": max(kept for _, _, kept in invocations),
            "record_mb": len(json.dumps(first)) / 1e6,
        }

    return act, inspect


# ---- the parent: every scenario, each library -------------------------------------------------


def measure(scenario: str, options: argparse.Namespace, library: Path | None) -> dict[str, Any]:
    env = dict(os.environ)
    if library is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(library), env.get("PYTHONPATH", "")])
    command = [
        sys.executable,
        __file__,
        "--child",
        scenario,
        "--messages",
        str(options.messages),
        "--kpl-users",
        str(options.kpl_users),
        "--budget-ms",
        str(options.budget_ms),
    ]
    if library is not None:
        command.append("--before-library")
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def exported(rev: str, folder: Path) -> Path:
    """`layers/inbox` as it was at `rev`, for a child's path."""
    archive = subprocess.run(
        ["git", "archive", rev, "layers/inbox/lambda_inbox"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder / "layers" / "inbox"


def report(results: dict[str, dict[str, dict[str, Any]]], options: argparse.Namespace) -> None:
    """The tables of the scenarios measured."""
    sides = list(next(result for result in results.values() if result))
    if results["poison"] and results["good"]:
        traffic_table(results, sides, options.messages)
    if all(results[scenario] for scenario in ("avro", "protobuf", "zlib", "batch")):
        bombs_table(results, sides)
    if results["kpl"]:
        fan_out_table(results, sides, options)


def traffic_table(results: dict[str, dict[str, dict[str, Any]]], sides: list[str], n: int) -> None:
    print(f"\n{n:,} messages in batches of 10 (requests and WCU in all):\n")
    print("| traffic | side | DynamoDB requests | SQS requests | WCU | CPU s |")
    print("|---|---|---|---|---|---|")
    for scenario in ("poison", "good"):
        for side in sides:
            r = results[scenario][side]
            if "error" in r:
                print(f"| {scenario} | {side} | error: {r['error']} | | | |")
                continue
            dynamodb = _per_operation(r["requests"], "dynamodb")
            sqs = _per_operation(r["requests"], "sqs")
            print(
                f"| {scenario} | {side} | {dynamodb} | {sqs} | {r['wcu']:,.0f} | {r['cpu']:.2f} |"
            )


def bombs_table(results: dict[str, dict[str, dict[str, Any]]], sides: list[str]) -> None:
    print("\nOne batch holding one hostile record (nine ordinary ones beside it):\n")
    print("| record | side | CPU s | peak MB above start | the hostile record | others committed |")
    print("|---|---|---|---|---|---|")
    for scenario in ("avro", "protobuf", "zlib", "batch"):
        for side in sides:
            r = results[scenario][side]
            if "error" in r:
                print(f"| {scenario} | {side} | error: {r['error']} | | | |")
                continue
            fate = ", ".join(r["dead_lettered"]) or ("reported" if r["reported"] else "-")
            print(
                f"| {scenario} | {side} | {r['cpu']:.3f} | {r['peak_mb']:.1f} | {fate} "
                f"| {r['committed']} |"
            )


def fan_out_table(
    results: dict[str, dict[str, dict[str, Any]]], sides: list[str], options: argparse.Namespace
) -> None:
    print(
        f"\nA Kinesis record of {options.kpl_users:,} user records, {options.budget_ms} ms an "
        "invocation:\n"
    )
    print(
        "| side | invocations | done | user records applied | longest invocation s "
        "| peak MB of an invocation (most kept after one) | CPU s in all |"
    )
    print("|---|---|---|---|---|---|---|")
    for side in sides:
        r = results["kpl"][side]
        if "error" in r:
            print(f"| {side} | error: {r['error']} | | | | | |")
            continue
        print(
            f"| {side} | {r['invocations']} | {'yes' if r['done'] else 'no'} | {r['applied']:,} "
            f"| {r['longest_invocation']:.2f} | {r['invocation_peak_mb']:.0f} ({r['kept_mb']:.0f}) "
            f"| {r['cpu']:.1f} |"
        )


def _per_operation(requests: dict[str, int], service: str) -> str:
    mine = {
        name.split(" ", 1)[1]: count for name, count in requests.items() if name.startswith(service)
    }
    total = sum(mine.values())
    detail = ", ".join(f"{count:,} {operation}" for operation, count in sorted(mine.items()))
    return f"{total:,} ({detail})" if mine else "0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", metavar="REV", help="also measure the library at REV")
    parser.add_argument("--messages", type=int, default=1_000)
    parser.add_argument("--kpl-users", type=int, default=150_000)
    parser.add_argument("--budget-ms", type=int, default=3_000)
    parser.add_argument("--only", choices=SCENARIOS, action="append", help="these scenarios only")
    parser.add_argument("--child", choices=SCENARIOS, help=argparse.SUPPRESS)
    parser.add_argument("--before-library", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        import logging

        logging.disable(logging.CRITICAL)  # the consumers' log lines: not the scenario's cost
        os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "HostileCost")
        print(json.dumps(child(options.child, options)))
        return
    scenarios = options.only or list(SCENARIOS)
    results: dict[str, dict[str, dict[str, Any]]] = {scenario: {} for scenario in SCENARIOS}
    with tempfile.TemporaryDirectory() as folder:
        library = exported(options.before, Path(folder)) if options.before else None
        for scenario in scenarios:
            if library is not None:
                results[scenario][f"before ({options.before})"] = measure(
                    scenario, options, library
                )
            results[scenario]["after"] = measure(scenario, options, None)
            print(f"{scenario}: {json.dumps(results[scenario])}", file=sys.stderr)
    report(results, options)


if __name__ == "__main__":
    main()
