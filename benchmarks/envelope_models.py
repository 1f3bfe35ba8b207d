"""Envelopes: what Powertools' parser models of an SNS notification, an EventBridge event and an
S3 notification cost at cold start, against pydantic models of the same fields written by hand.

    .venv/bin/python benchmarks/envelope_models.py        # instructions (callgrind)

Instruction counts of fresh interpreters (valgrind's callgrind), each importing pydantic and
`lambda_inbox` first (the base), then one of: Powertools' `SnsNotificationModel`,
`EventBridgeModel`, `S3Model`; or two small models written by hand with only the fields the
envelopes read, one of them validating a document. The hand-written models are the alternative
to Powertools': what building any first pydantic model costs is in both. A consumer with an
envelope loads one of Powertools' models on its first batch (`lambda_inbox._sources.envelopes`);
a consumer without one loads none (tests/unit/sources/test_envelopes.py).
"""

from __future__ import annotations

import subprocess
import sys

from devkit.callgrind import count_instructions, require_valgrind
from devkit.paths import REPO_ROOT

BASE = "import pydantic; from pydantic import BaseModel; import lambda_inbox"
MODELS = "from aws_lambda_powertools.utilities.parser.models import "
HAND_WRITTEN = """
from typing import Any, Literal
class Notification(BaseModel):
    Type: Literal['Notification']
    MessageId: str
    TopicArn: str
    Message: str
    Timestamp: str
class Event(BaseModel):
    id: str
    source: str
    detail: dict[str, Any]
Notification.model_validate({'Type': 'Notification', 'MessageId': 'm', 'TopicArn': 't',
                             'Message': '{}', 'Timestamp': 'x'})
"""
PROGRAMS = {
    "base: pydantic, lambda_inbox": BASE,
    "+ SnsNotificationModel": f"{BASE}; {MODELS}SnsNotificationModel",
    "+ EventBridgeModel": f"{BASE}; {MODELS}EventBridgeModel",
    "+ S3Model": f"{BASE}; {MODELS}S3Model",
    "+ two models written by hand": BASE + HAND_WRITTEN,
}


def main() -> None:
    require_valgrind()
    env = {"PYTHONHASHSEED": "0", "PYTHONPATH": str(REPO_ROOT / "layers" / "inbox")}
    for body in PROGRAMS.values():  # write the .pyc files first: compiling is not cold start
        subprocess.run([sys.executable, "-c", body], check=True, cwd="/", env=env)
    counts = {
        name: count_instructions([sys.executable, "-c", body], env=env, cwd="/") / 1e6
        for name, body in PROGRAMS.items()
    }
    base = counts["base: pydantic, lambda_inbox"]
    print("| program | instructions (M) | over the base (M) |")
    print("|---|---:|---:|")
    for name, count in counts.items():
        print(f"| {name} | {count:.1f} | {count - base:+.1f} |")


if __name__ == "__main__":
    main()
