"""Kafka value codecs: what the Avro and Protobuf decoders cost a payment function.

    .venv/bin/python benchmarks/kafka_codecs.py                # instructions (callgrind)
    .venv/bin/python benchmarks/kafka_codecs.py --layers       # also the built layers' sizes

Instruction counts of fresh interpreters (valgrind's callgrind: the same on every run, however
busy the machine), each with `functions/payment_events` and the library on `sys.path` as Lambda
has them:

- `import lambda_inbox`, for scale;
- `payment_events` imported: its cold start with KafkaCodecsLayer present (the decoders are not
  loaded: the Avro schema is read, the Protobuf class is resolved on the first Protobuf value);
- that, plus one JSON, one Avro or one Protobuf payment decoded: the first value of each format
  loads its decoder (Powertools' deserializer and avro, or the Protobuf runtime and the
  generated class);
- with `--before REV`: `payment_events` imported as it was at REV (a git worktree), e.g. the
  commit before value formats, when it read JSON only and had no decoders.

`--layers` runs `make build` when `.aws-sam/build` is missing and reports each layer's size,
unpacked and zipped (what Lambda's 250 MB and 50 MB limits count).
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from devkit.handlers import function_dir, load_function
from devkit.layer_size import layer_size
from devkit.paths import REPO_ROOT
from lambda_inbox_tools.testing.values import avro_value, protobuf_value

# The callgrind runner of the cold start benchmark (benchmarks/ is on the path when run).
cold_start: Any = importlib.import_module("cold_start")

PAYMENT = {
    "event_id": "evt-1",
    "payment_id": "pay-1",
    "order_id": "ord-1",
    "customer_id": "cust-1",
    "amount_cents": 1250,
}
SCHEMAS = function_dir("payment_events") / "schemas"


def _path(root: Path = REPO_ROOT) -> str:
    function = root / "functions" / "payment_events"
    return f"import sys\nsys.path[:0] = [{str(function)!r}, {str(root / 'layers' / 'inbox')!r}]"


_PATH = _path()
_DECODE = (
    "from lambda_inbox._sources.values import ValueFormats\n"
    "formats = app.VALUE_FORMATS\n"
    "value = {value!r}\n"
    "formats.decode(formats.classify(value))"
)


def protobuf_payment() -> bytes:
    """A framed Protobuf payment, made with the function's own generated class."""
    os.environ.update({**cold_start.ENV, **os.environ})  # the function's variables, if unset
    message = load_function("payment_events").VALUE_FORMATS.protobuf_class()(**PAYMENT)
    return protobuf_value(message, schema_id=2)


def programs() -> dict[str, str]:
    json_value = b'{"event_id":"evt-1","payment_id":"pay-1","order_id":"ord-1",' + (
        b'"customer_id":"cust-1","amount_cents":1250}'
    )
    framed_json = b"\x00\x00\x00\x00\x03" + json_value
    avro = avro_value(SCHEMAS / "payment_captured.avsc", PAYMENT, schema_id=1)
    handler = f"{_PATH}\nimport app"
    return {
        "import lambda_inbox": f"{_PATH}\nimport lambda_inbox",
        "payment_events imported (decoders present, not loaded)": handler,
        "+ first JSON value (framed)": f"{handler}\n{_DECODE.format(value=framed_json)}",
        "+ first Avro value": f"{handler}\n{_DECODE.format(value=avro)}",
        "+ first Protobuf value": f"{handler}\n{_DECODE.format(value=protobuf_payment())}",
    }


def warm(body: str) -> None:
    """One unmeasured run writes the .pyc files: compiling is not cold start."""
    subprocess.run([sys.executable, "-c", body], env=cold_start.child_env(), cwd="/", check=True)


def before(rev: str) -> int:
    """`payment_events` imported at `rev`, from a temporary git worktree."""
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "before"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree), rev], check=True)
        try:
            body = f"{_path(tree)}\nimport app"
            warm(body)
            count: int = cold_start.instructions(body)
            return count
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], check=True)


def layer_sizes() -> list[tuple[str, int, int]]:
    build = REPO_ROOT / ".aws-sam" / "build"
    if not (build / "KafkaCodecsLayer").is_dir():
        subprocess.run(["make", "-s", "build"], cwd=REPO_ROOT, check=True)
    return [(layer, *layer_size(build / layer)) for layer in ("InboxLayer", "KafkaCodecsLayer")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", action="store_true", help="also the built layers' sizes")
    parser.add_argument("--before", metavar="REV", help="also payment_events imported at REV")
    options = parser.parse_args()
    print(f"Instructions of one fresh interpreter (callgrind), Python {sys.version.split()[0]}.")
    print()
    print("| program | instructions (M) |")
    print("|---|---:|")
    for name, body in programs().items():
        warm(body)
        print(f"| {name} | {cold_start.instructions(body) / 1e6:.1f} |")
    if options.before:
        print(
            f"| payment_events imported at {options.before} | {before(options.before) / 1e6:.1f} |"
        )
    if options.layers:
        print()
        print("| layer | unpacked (MB) | zipped (MB) |")
        print("|---|---:|---:|")
        for layer, unpacked, zipped in layer_sizes():
            print(f"| {layer} | {unpacked / 1e6:.1f} | {zipped / 1e6:.2f} |")


if __name__ == "__main__":
    main()
