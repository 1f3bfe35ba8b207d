"""Instructions per `UnitOfWork` action, and per order of the order handler's writes: deterministic.

    .venv/bin/python benchmarks/unit_of_work_instructions.py [--iterations N] [--library DIR ...]

`consumer_instructions.py` counts a whole batch; this counts the unit of work alone, the largest
part of the library's work per message, action by action. Each snippet runs in a fresh
interpreter under valgrind's callgrind, N iterations between two `os.getppid()` calls
(`devkit.callgrind.count_window`, since 2026-11-27: before, the difference of a run with N
iterations and one with none, which carried the start's run-to-run spread). Nothing but
`lambda_inbox` is imported: no boto3, no handler, no network. What each iteration counts
includes a new `UnitOfWork` (about 3 K instructions) and formatting its keys (about 2 K per
f-string).

Snippets (the writes of `functions/order_events/app.py` for one order of two lines):

- `order`: two conditional stock updates, the shipment's put, the rejection's condition check,
  the notification's outbox item and the result;
- `update`, `put`, `condition_check`, `outbox`: each of those actions alone.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from devkit.callgrind import (
    add_library_option,
    chosen_libraries,
    count_window,
    require_valgrind,
)

_SETUP = """
import hashlib
from lambda_inbox._commit.unit_of_work import UnitOfWork

LINES = [{"sku": "SKU-1", "qty": 2}, {"sku": "SKU-7", "qty": 1}]
TABLE = "domain"
STOCK = "SET available = available - :qty ADD reserved :qty"


def update(uow, i):
    uow.update(TABLE, {"pk": f"SKU#{i}", "sk": "STOCK"}, STOCK, condition="available >= :qty",
               values={":qty": 2}, label="stock:x")


def put(uow, i):
    uow.put(TABLE, {"pk": f"ORDER#{i}", "sk": "SHIPMENT", "status": "PENDING",
                    "customer_id": "cust-1", "lines": LINES, "event_id": f"evt-{i}"},
            condition="attribute_not_exists(pk)", label="shipment")


def condition_check(uow, i):
    uow.condition_check(TABLE, {"pk": f"ORDER#{i}", "sk": "REJECTION"},
                        "attribute_not_exists(pk)", label="rejection")


def outbox(uow, i):
    event_id = f"shipped-{i}"
    uow.outbox(TABLE, destination="notifications", message_id=event_id,
               body={"event_id": event_id, "customer_id": "cust-1", "order_id": f"ord-{i}",
                     "template": "order_shipped"})


def order(uow, i):
    for line in LINES:
        uow.update(TABLE, {"pk": f"SKU#{line['sku']}", "sk": "STOCK"}, STOCK,
                   condition="available >= :qty", values={":qty": line["qty"]},
                   label=f"stock:{line['sku']}")
    put(uow, i)
    condition_check(uow, i)
    event_id = "shipped-" + hashlib.sha256(f"ord-{i}".encode()).hexdigest()[:32]
    uow.outbox(TABLE, destination="notifications", message_id=event_id,
               body={"event_id": event_id, "customer_id": "cust-1", "order_id": f"ord-{i}",
                     "template": "order_shipped"})
    uow.set_result(outcome="reserved")


order(UnitOfWork(), -1)  # every cache and lazy import warm before counting
"""

SNIPPETS = ("order", "update", "put", "condition_check", "outbox")


def per_iteration(library: Path, snippet: str, iterations: int) -> float:
    """Thousands of instructions per iteration of `snippet` on `library`."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(library), "PYTHONHASHSEED": "0"}

    loop = f"for i in range({iterations}):\n    {snippet}(UnitOfWork(), i)\n"
    code = f"{_SETUP}\nimport os\nos.getppid()\n{loop}os.getppid()\n"  # the counted window
    return count_window([sys.executable, "-c", code], env=env) / iterations / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=2000, help="default 2000")
    add_library_option(parser)
    args = parser.parse_args()
    require_valgrind()
    libraries = [path.resolve() for path in chosen_libraries(args)]
    print(
        f"K instructions per iteration, {args.iterations} iterations; Python {sys.version.split()[0]}.\n"
    )
    print("| library | " + " | ".join(SNIPPETS) + " |\n|---|" + "---:|" * len(SNIPPETS))
    for library in libraries:
        counts = [per_iteration(library, snippet, args.iterations) for snippet in SNIPPETS]
        print(f"| {library} | " + " | ".join(f"{k:.1f}" for k in counts) + " |", flush=True)


if __name__ == "__main__":
    main()
