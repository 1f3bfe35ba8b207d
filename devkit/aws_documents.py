"""AWS's documented samples (tests/fixtures/aws/) and the comparison of a document's shape with
one of them: the same keys, holding values of the same JSON kinds, all the way down; the values
themselves aside.

Some objects of AWS's documents have keys of their own choosing (an event's `records` keyed by
`"<topic>-<partition>"`, an item image keyed by attribute name, a header keyed by its name):
`MAPS` names them. Each value of such a map must have the shape of the sample's first value
(`"same"`), or only be of the same kind (`"kind"`: an attribute value's type tag varies).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from .paths import REPO_ROOT

AWS_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "aws"

MapRule = Literal["same", "kind"]
#: Keys whose object values are maps with keys of the sender's choosing (`name[]`: the elements
#: of the array `name`).
MAPS: dict[str, MapRule] = {
    "records": "same",
    "recordsInfo": "same",
    "headers[]": "same",
    "messageAttributes": "same",
    "Keys": "kind",
    "NewImage": "kind",
    "OldImage": "kind",
    "detail": "kind",
}


def aws_fixture_path(name: str) -> Path:
    return AWS_FIXTURES / name


def aws_document(name: str) -> Any:
    """The sample `tests/fixtures/aws/<name>` (parsed JSON)."""
    with aws_fixture_path(name).open(encoding="utf-8") as stream:
        return json.load(stream)


def kind(value: object) -> str:
    """The JSON kind of a parsed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__  # not JSON at all: never equal to a sample's kind


def shape_problems(
    sample: object, document: object, *, maps: Mapping[str, MapRule] = MAPS
) -> list[str]:
    """What `document` lacks or holds of another kind than `sample` does (empty: same shape).
    Keys the document has beyond the sample's are allowed."""
    return _problems(sample, document, maps, "$", "")


def _problems(
    sample: object, document: object, maps: Mapping[str, MapRule], path: str, name: str
) -> list[str]:
    if kind(sample) != kind(document):
        return [f"{path}: {kind(document)} where AWS's sample has {kind(sample)}"]
    if isinstance(sample, list) and isinstance(document, list):
        if not sample:
            return []
        problems: list[str] = []
        for index, element in enumerate(document):
            problems += _problems(sample[0], element, maps, f"{path}[{index}]", f"{name}[]")
        return problems
    if not isinstance(sample, Mapping) or not isinstance(document, Mapping):
        return []
    rule = maps.get(name)
    if rule is not None:
        return _map_problems(sample, document, rule, maps, path)
    problems = []
    for key, value in sample.items():
        if key not in document:
            problems.append(f"{path}.{key}: missing")
        else:
            problems += _problems(value, document[key], maps, f"{path}.{key}", key)
    return problems


def _map_problems(
    sample: Mapping[str, Any],
    document: Mapping[str, Any],
    rule: MapRule,
    maps: Mapping[str, MapRule],
    path: str,
) -> list[str]:
    """Every value of `document` against the first value of `sample` (a map's keys vary)."""
    if not sample:
        return []
    first = next(iter(sample.values()))
    problems: list[str] = []
    for key, value in document.items():
        where = f"{path}[{key!r}]"
        if rule == "kind":
            if kind(value) != kind(first):
                problems.append(f"{where}: {kind(value)} where AWS's sample has {kind(first)}")
        else:
            problems += _problems(first, value, maps, where, "")
    return problems
