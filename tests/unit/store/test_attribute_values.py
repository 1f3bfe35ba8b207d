"""The unit of work's serializer gives exactly boto3's `TypeSerializer` values, and sizes them
as `attribute_size` does, in one pass; what it does not take itself goes to boto3."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import Binary, TypeSerializer
from hypothesis import given, settings
from hypothesis import strategies as st

from lambda_inbox import UnitOfWork, UnitOfWorkError
from lambda_inbox.store import item_size
from lambda_inbox.store._attribute_values import attribute_size, number_size, sized

SERIALIZER = TypeSerializer()

scalars = st.one_of(
    st.text(),
    st.integers(min_value=-(10**38) + 1, max_value=10**38 - 1),
    st.booleans(),
    st.none(),
    # Within 38 significant digits, both ways: what DynamoDB stores exactly.
    st.decimals(
        allow_nan=False, allow_infinity=False, places=3, min_value=-(10**20), max_value=10**20
    ),
    st.binary(max_size=20),
    st.sets(st.text(min_size=1, max_size=5), min_size=1, max_size=4),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_same_values_as_boto3_and_the_same_sizes(value: Any) -> None:
    serialized, size = sized(value)
    assert serialized == SERIALIZER.serialize(value)
    assert size == attribute_size(serialized)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1.5, "use int or Decimal"),
        ({"price": 1.5}, "use int or Decimal"),
        (10**38, "38 significant digits"),
        ({1: "a"}, "map keys must be strings"),
        ("\ud800", "not valid UTF-8"),
        (object(), "Unsupported type"),
    ],
)
def test_what_dynamodb_cannot_store_is_a_unit_of_work_error_that_says_where(
    value: Any, message: str
) -> None:
    with pytest.raises(UnitOfWorkError, match="put on t, 'a'") as raised:
        UnitOfWork().put("t", {"pk": "k", "a": value})
    assert message in str(raised.value)


def test_values_boto3_takes_and_the_fast_path_does_not() -> None:
    assert sized(Binary(b"\x00")) == ({"B": Binary(b"\x00")}, 1)
    assert sized(Decimal("1.50")) == ({"N": "1.50"}, 4)
    assert sized(10**38 - 1) == ({"N": str(10**38 - 1)}, 21)


@pytest.mark.parametrize(
    ("text", "size"),
    [("1", 2), ("-1", 3), ("10", 3), ("100000", 5), ("12", 3), ("-12.5", 4), ("1E+5", 4)],
)
def test_a_numbers_size_is_an_upper_bound_of_dynamodbs(text: str, size: int) -> None:
    """AWS's rule ("Item sizes and formats"): one byte per two significant digits, plus one;
    the size counts every character of the text instead, so it never undercounts."""
    significant = text.lstrip("-").partition("E")[0].replace(".", "").strip("0")
    assert number_size(text) == size >= (len(significant) + 1) // 2 + 1
    assert item_size({"n": {"N": text}}) == 1 + size
