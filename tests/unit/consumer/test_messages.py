"""`InboundMessage.json`: pydantic's JSON reader once pydantic is loaded, with `json.loads`'s
values and `json.loads` for whatever it refuses."""

from __future__ import annotations

import json
import sys
from typing import Any

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lambda_inbox import ErrorCode, InboundMessage
from lambda_inbox import _messages as messages
from lambda_inbox._errors import UndecodableBody

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


def test_the_fast_reader_is_pydantics_once_pydantic_is_loaded() -> None:
    assert messages._fast_json_reader() is pydantic_core.from_json


@settings(max_examples=300, deadline=None)
@given(DOCUMENTS, st.booleans(), st.sampled_from([None, 2]))
def test_documents_read_as_json_loads_reads_them(
    document: Any, ascii_only: bool, indent: int | None
) -> None:
    text = json.dumps(document, ensure_ascii=ascii_only, indent=indent)
    read = message(text).json
    expected = json.loads(text)
    assert repr(read) == repr(expected)  # same values and types (1 and 1.0 differ in repr)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"\\ud800"', "\ud800"),  # a lone surrogate escape: pydantic refuses it
        ("[" * 300 + "]" * 300, json.loads("[" * 300 + "]" * 300)),  # deeper than it reads
    ],
)
def test_what_pydantic_refuses_json_loads_reads(text: str, expected: Any) -> None:
    with pytest.raises(ValueError):
        pydantic_core.from_json(text)
    assert repr(message(text).json) == repr(expected)


def test_non_finite_numbers_read_as_json_loads_reads_them() -> None:
    text = '{"a": NaN, "b": -Infinity, "c": 1e400}'
    assert repr(message(text).json) == repr(json.loads(text))


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"a": "line\nbreak"}', "Invalid control character"),
        ('{"a": 1,}', "Expecting property name|Illegal trailing comma"),  # 3.13 words it so
        ('{"a": 1} trailing', "Extra data"),
        ("\ufeff{}", "Unexpected UTF-8 BOM"),
    ],
)
def test_invalid_bodies_are_poison_in_json_loads_words(body: str, words: str) -> None:
    with pytest.raises(UndecodableBody, match=words) as raised:
        _ = message(body).json
    assert raised.value.code == ErrorCode.MALFORMED_JSON


def test_without_pydantic_loaded_json_loads_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(messages, "_from_json", None)
    monkeypatch.delitem(sys.modules, "pydantic_core")
    assert messages._fast_json_reader() is None
    assert message('{"b": [1, 2.5, "x"]}').json == {"b": [1, 2.5, "x"]}
