"""Reading the EMF metric records Powertools Metrics prints to stdout."""

from __future__ import annotations

import json
from typing import Any


def emf_records(output: str) -> list[dict[str, Any]]:
    """The EMF records (one JSON object per line, with an `_aws` key) in captured stdout."""
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]
