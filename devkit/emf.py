"""Reading the EMF metric records Powertools Metrics prints to stdout."""

from __future__ import annotations

import json
from typing import Any


def emf_records(output: str) -> list[dict[str, Any]]:
    """The EMF records (one JSON object per line, with an `_aws` key) in captured stdout."""
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]


def metric_value(record: dict[str, Any], name: str) -> float:
    """The value of metric `name` in an EMF record (Powertools writes a single value as a list of
    one in some versions and as a number in others)."""
    value = record[name]
    if isinstance(value, list):
        (value,) = value
    return float(value)
