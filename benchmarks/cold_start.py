"""Cold start: what importing a handler module (and creating its clients) costs in a fresh interpreter.

    .venv/bin/python benchmarks/cold_start.py [--runs N] [--top K]      # wall and CPU time
    .venv/bin/python benchmarks/cold_start.py --instructions             # instruction counts

Programs, each a fresh interpreter, every one with the same two folders first on `sys.path` (the
function's code folder and the layer), as every Lambda function has its code folder and
`/opt/python` ahead of the runtime's: each folder searched costs every top-level import a little
(~12 M instructions for the floor's imports), which belongs to the environment, not to either
handler. The reference's folders differ (`benchmarks/` and the layer); its floors would cost
0.3 M more.

- floor:      `import boto3, pydantic; boto3.client("dynamodb")`, the project's floor. pydantic 2
              imports lazily, so this loads almost none of pydantic;
- floor+pydantic: the floor plus `from pydantic import BaseModel, ConfigDict, Field` (the names
              both handlers import): the floor with pydantic actually loaded;
- floor+pydantic+models: that, plus the handler's two payload models (read from app.py; the
              reference defines the same two);
- inbox:      `functions/order_events/app.py` imported as Lambda does (its folder and the layer on
              sys.path), with INBOX_TABLE, DOMAIN_TABLE and DEAD_LETTER_QUEUE_URL set, then its
              DynamoDB client made (the consumer makes it on first use, the floor at import: the
              program makes it too, so both count it; the SQS client of the dead-letter queue
              is made on the first poison message);
- powertools: `benchmarks/reference_powertools_consumer.py` (Logger, Metrics, idempotency with
              DynamoDBPersistenceLayer, BatchProcessor, parser), creating its clients at import.

Time mode runs each program N times, interleaved (the order rotates every round, so drift on a
noisy machine hits all alike), and reports three clocks: "init CPU" (CPU time of the child from
its first statement to the end of the import, the least sensitive to other processes), "init"
(the same in wall time: what Lambda's INIT phase adds on top of the runtime start) and "wall"
(the parent's time for the whole child process). Overhead = median(program) - median(floor).
Then `python -X importtime` lists the modules each handler imports beyond the floor.

Instruction mode runs each program once under valgrind's callgrind (after one unmeasured run
that writes the .pyc files) and counts the instructions the whole process executes: the same
count on every run whatever else the machine does, so small differences are visible. It adds
cumulative stages that split the inbox handler's cost: pydantic loaded, Powertools Logger and
Metrics imported, `lambda_inbox` imported, the handler module.

The target (docs/PERFORMANCE.md, "Targets"): the inbox overhead over floor+pydantic+models at
most 40% of the Powertools reference's, and the `import lambda_inbox` stage at most 25 M
instructions; on Python 3.13, the runtime, and on the development interpreter.
The ratio is reported over each of the three floors.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from devkit.callgrind import count_instructions, require_valgrind
from devkit.paths import FUNCTIONS_DIR, REPO_ROOT
from lambda_inbox_tools.services.offline import OFFLINE_AWS_ENV

PYTHON = sys.executable
#: Inbox overhead over floor+pydantic+models, % of the Powertools reference's.
TARGET_SHARE = 40
#: The `import lambda_inbox` stage, millions of instructions.
TARGET_IMPORT_MILLIONS = 25
APP = (FUNCTIONS_DIR / "order_events") / "app.py"
_VERSION = sys.version.split()[0]

ENV = {
    **OFFLINE_AWS_ENV,
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

_FLOOR = 'import boto3, pydantic\nboto3.client("dynamodb")'
_PYDANTIC = "from pydantic import BaseModel, ConfigDict, Field"
_HANDLER_PATH = (
    "import sys\n"
    f"sys.path[:0] = [{str(FUNCTIONS_DIR / 'order_events')!r}, "
    f"{str(REPO_ROOT / 'layers' / 'inbox')!r}]"
)


def _payload_models() -> str:
    """The source of the handler's payload models (its classes), as it defines them; the
    Powertools reference defines the same two."""
    source = APP.read_text()
    classes = [node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)]
    return "\n\n".join(ast.get_source_segment(source, node) or "" for node in classes)


_MODELS = _payload_models()

PROGRAMS = {
    "floor": f"{_HANDLER_PATH}\n{_FLOOR}",
    "floor+pydantic": f"{_HANDLER_PATH}\n{_FLOOR}\n{_PYDANTIC}",
    "floor+pydantic+models": f"{_HANDLER_PATH}\n{_FLOOR}\n{_PYDANTIC}\n{_MODELS}",
    # The consumer makes its DynamoDB client on first use; touching it makes it here, as the
    # floor and the reference make theirs at import.
    "inbox": f"{_HANDLER_PATH}\nimport app\napp.consumer.dynamodb.meta",
    # Two folders first on the path, like the inbox handler's: on Lambda every function has
    # its code folder and /opt/python ahead of the runtime's, and each folder searched costs
    # every later import a few million instructions, whoever owns the folder.
    "powertools": (
        f"import sys\nsys.path[:0] = [{str(REPO_ROOT / 'benchmarks')!r}, "
        f"{str(REPO_ROOT / 'layers' / 'inbox')!r}]\n"
        "import reference_powertools_consumer"
    ),
}

#: Instruction mode only: the inbox handler's way from the floor, one step at a time. The handler
#: module then adds its models, its consumer and its DynamoDB client (in place of the floor's).
_POWERTOOLS = "from aws_lambda_powertools import Logger, Metrics"
#: Both stages put the handler's folders on `sys.path` first, as Lambda does: every later import
#: searches them, which costs about 10 M instructions that belong to neither stage's imports.
STAGES = {
    "+ Powertools Logger, Metrics": f"{_HANDLER_PATH}\n{_FLOOR}\n{_PYDANTIC}\n{_POWERTOOLS}",
    "+ import lambda_inbox": f"{_HANDLER_PATH}\n{_FLOOR}\n{_PYDANTIC}\n{_POWERTOOLS}\n"
    "import lambda_inbox",
}


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.pop("PYTHONPATH", None)
    # The layer ships compiled bytecode (layers/inbox/Makefile), so every program runs with its
    # .pyc files cached: the unmeasured first run writes them, whatever the caller's setting.
    # Beside the sources, as in the layer (a cache prefix elsewhere, as `make` sets, would hide
    # the layer's own).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
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


FLOORS = ("floor", "floor+pydantic", "floor+pydantic+models")


def verdicts(clock: str, over: dict[str, dict[str, float]]) -> list[str]:
    """One line per floor: inbox overhead / powertools overhead; the target (40%) applies over
    floor+pydantic+models, the floor that holds what both handlers load alike."""
    lines = []
    for floor in FLOORS:
        inbox, reference = over[floor]["inbox"], over[floor]["powertools"]
        head = f"over {floor} ({clock}): inbox / powertools = {inbox:.1f} / {reference:.1f}"
        if inbox <= 0 or reference <= 0:  # a median below the floor's: noise, no ratio
            lines.append(f"{head}: within noise, no verdict")
            continue
        share = inbox / reference * 100
        if floor != FLOORS[-1]:
            lines.append(f"{head} = {share:.0f}%")
            continue
        verdict = "met" if share <= TARGET_SHARE else "not met"
        lines.append(f"{head} = {share:.0f}% (target <= {TARGET_SHARE}%: {verdict})")
    return lines


def time_mode(runs: int, top: int) -> None:
    names = list(PROGRAMS)
    for name in names:  # warm the OS page cache and .pyc files once, unmeasured
        run_once(name)
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in names}
    for round_number in range(runs):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(run_once(name))

    clocks = {"init CPU": 2, "init": 0, "wall": 1}
    medians = {
        clock: {n: statistics.median(s[index] for s in samples[n]) * 1000 for n in names}
        for clock, index in clocks.items()
    }
    print(f"Fresh interpreters: {runs} per program, interleaved; medians; Python {_VERSION}.")
    print()
    print(
        "| program | init CPU ms (in child) | over floor | init ms (in child) | over floor "
        "| wall ms (process) | over floor |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for n in names:
        cells = [
            f"{medians[c][n]:.1f} | {medians[c][n] - medians[c]['floor']:+.1f}" for c in clocks
        ]
        print(f"| {n} | " + " | ".join(cells) + " |")
    print()
    for clock, values in medians.items():
        over = {f: {n: values[n] - values[f] for n in names} for f in FLOORS}
        print("\n".join(verdicts(clock, over)))
    print()
    floor = import_times("floor")
    for name in ("inbox", "powertools"):
        print("\n".join(top_level_extra(name, floor, top)))
        print()


def instructions(body: str) -> int:
    """Instructions executed by a fresh interpreter running `body`, counted by callgrind."""
    env = {**child_env(), "PYTHONHASHSEED": "0"}
    return count_instructions([PYTHON, "-c", body], env=env, cwd="/")


def instruction_mode() -> None:
    require_valgrind()
    bodies = {**PROGRAMS, **STAGES}
    for body in bodies.values():  # write the .pyc files first: compiling is not cold start
        subprocess.run([PYTHON, "-c", body], env=child_env(), cwd="/", check=True)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counts = dict(zip(bodies, pool.map(instructions, bodies.values()), strict=True))

    million = {name: count / 1e6 for name, count in counts.items()}
    print(f"Instructions executed by one fresh interpreter (callgrind), Python {_VERSION}.")
    print()
    print("| program | instructions (M) | " + " | ".join(f"over {f} (M)" for f in FLOORS) + " |")
    print("|---|---:|" + "---:|" * len(FLOORS))
    for name in PROGRAMS:
        cells = " | ".join(f"{million[name] - million[f]:+.1f}" for f in FLOORS)
        print(f"| {name} | {million[name]:.1f} | {cells} |")
    print()
    over = {f: {n: million[n] - million[f] for n in PROGRAMS} for f in FLOORS}
    print("\n".join(verdicts("instructions", over)))
    print()
    print("Where the inbox handler's instructions go (cumulative stages):")
    print()
    print("| stage | instructions (M) | added (M) | share of inbox overhead over floor |")
    print("|---|---:|---:|---:|")
    path = ["floor", "floor+pydantic", *STAGES, "inbox"]
    labels = {
        "floor+pydantic": "+ pydantic loaded",
        "inbox": "+ the handler module: payload models, consumer, its DynamoDB client",
    }
    total = million["inbox"] - million["floor"]
    for previous, stage in itertools.pairwise(path):
        added = million[stage] - million[previous]
        print(
            f"| {labels.get(stage, stage)} | {million[stage]:.1f} | {added:+.1f} "
            f"| {added / total * 100:.0f}% |"
        )
    library = million["+ import lambda_inbox"] - million["+ Powertools Logger, Metrics"]
    verdict = "met" if library <= TARGET_IMPORT_MILLIONS else "not met"
    print(
        f"\n`import lambda_inbox`: {library:+.1f} M (target <= {TARGET_IMPORT_MILLIONS} M: {verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="fresh interpreters per program")
    parser.add_argument("--top", type=int, default=15, help="modules listed per program")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions with valgrind instead of timing (deterministic, ~1 min)",
    )
    args = parser.parse_args()
    if args.instructions:
        instruction_mode()
    else:
        time_mode(args.runs, args.top)


if __name__ == "__main__":
    main()
