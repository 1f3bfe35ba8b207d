"""Lambda's FilterCriteria as the local stack applies them to stream records."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_inbox_tools.local.event_filter import FilterError, passes

RECORD: dict[str, Any] = {
    "eventName": "INSERT",
    "dynamodb": {
        "Keys": {"pk": {"S": "OUTBOX#e-1"}},
        "NewImage": {"pk": {"S": "OUTBOX#e-1"}, "tags": {"SS": ["a", "b"]}, "n": {"N": "7"}},
    },
}


@pytest.mark.parametrize(
    ("pattern", "delivered"),
    [
        ({"eventName": ["INSERT"]}, True),
        ({"eventName": ["MODIFY", "REMOVE"]}, False),
        ({"dynamodb": {"Keys": {"pk": {"S": [{"prefix": "OUTBOX#"}]}}}}, True),
        ({"dynamodb": {"Keys": {"pk": {"S": [{"prefix": "ORDER#"}]}}}}, False),
        ({"dynamodb": {"Keys": {"pk": {"S": [{"suffix": "-1"}]}}}}, True),
        ({"eventName": [{"anything-but": ["REMOVE"]}]}, True),
        ({"eventName": [{"anything-but": "INSERT"}]}, False),
        ({"eventName": [{"equals-ignore-case": "insert"}]}, True),
        ({"dynamodb": {"OldImage": [{"exists": False}]}}, True),
        ({"dynamodb": {"OldImage": [{"exists": True}]}}, False),
        ({"dynamodb": {"NewImage": {"tags": {"SS": ["b"]}}}}, True),
        ({"dynamodb": {"NewImage": {"n": {"N": [{"numeric": [">", 5, "<=", 7]}]}}}}, True),
        ({"dynamodb": {"NewImage": {"n": {"N": [{"numeric": ["=", 8]}]}}}}, False),
        ({"dynamodb": {"NewImage": {"missing": {"S": ["x"]}}}}, False),
    ],
)
def test_a_pattern_selects_records(pattern: dict[str, Any], delivered: bool) -> None:
    assert passes([pattern], RECORD) is delivered


def test_any_pattern_is_enough_and_none_delivers_everything() -> None:
    assert passes([{"eventName": ["REMOVE"]}, {"eventName": ["INSERT"]}], RECORD)
    assert passes([], RECORD)


def test_an_unknown_rule_is_an_error_not_a_silent_miss() -> None:
    with pytest.raises(FilterError, match="wildcard"):
        passes([{"eventName": [{"wildcard": "IN*"}]}], RECORD)
