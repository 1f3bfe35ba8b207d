"""`InboundMessage.json`: the body read by `json.loads`, and every invalid body poison in its
words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lambda_inbox.errors import ErrorCode, UndecodableBody
from lambda_inbox.messages import InboundMessage

LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False)
    | st.text()
)
DOCUMENTS = st.recursive(
    LEAVES,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=25,
)


def message(body: str | bytes) -> InboundMessage:
    raw = body.encode("utf-8", errors="surrogatepass") if isinstance(body, str) else body
    return InboundMessage("id-1", "id-1", raw, "sqs", 0)


@settings(max_examples=300, deadline=None)
@given(DOCUMENTS, st.booleans(), st.sampled_from([None, 2]))
def test_documents_read_as_json_loads_reads_them(
    document: Any, ascii_only: bool, indent: int | None
) -> None:
    text = json.dumps(document, ensure_ascii=ascii_only, indent=indent)
    read = message(text).json
    expected = json.loads(text)
    assert repr(read) == repr(expected)  # same values and types (1 and 1.0 differ in repr)


def test_non_finite_numbers_read_as_json_loads_reads_them() -> None:
    text = '{"a": NaN, "b": -Infinity, "c": 1e400}'
    assert repr(message(text).json) == repr(json.loads(text))


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"a": "line\nbreak"}', "Invalid control character"),
        ('{"a": 1,}', "Expecting property name"),
        ('{"a": 1} trailing', "Extra data"),
        ("\ufeff{}", "Unexpected UTF-8 BOM"),
    ],
)
def test_invalid_bodies_are_poison_in_json_loads_words(body: str, words: str) -> None:
    with pytest.raises(UndecodableBody, match=words) as raised:
        _ = message(body).json
    assert raised.value.code == ErrorCode.MALFORMED_JSON
