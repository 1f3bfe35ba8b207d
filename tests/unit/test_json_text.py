"""`json_text.text_encoder` gives exactly the text of the `JSONEncoder` it was made from, for
every setting the inbox uses, and refuses what that encoder would refuse."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lambda_inbox.json_text import text_encoder

SETTINGS: dict[str, dict[str, Any]] = {
    "canonical": {
        "sort_keys": True,
        "separators": (",", ":"),
        "ensure_ascii": False,
        "default": str,
    },
    "compact": {"separators": (",", ":")},
    "result": {"sort_keys": True, "default": str},
}

documents = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=15,
)


@pytest.mark.parametrize("name", SETTINGS)
@settings(max_examples=150, deadline=None)
@given(document=documents)
def test_the_text_is_the_json_encoders(name: str, document: Any) -> None:
    reference = json.JSONEncoder(**SETTINGS[name])
    encode = text_encoder(json.JSONEncoder(**SETTINGS[name], check_circular=False))
    assert encode(document) == reference.encode(document)


def test_default_serializes_what_json_has_no_type_for() -> None:
    encode = text_encoder(json.JSONEncoder(sort_keys=True, default=str, check_circular=False))
    assert encode({"b": Decimal("1.50"), "a": {"x"}}) == '{"a": "{\'x\'}", "b": "1.50"}'


def test_a_value_json_cannot_encode_raises_as_the_json_encoder_does() -> None:
    encode = text_encoder(json.JSONEncoder(check_circular=False))
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode({"when": object()})
    strict = text_encoder(json.JSONEncoder(allow_nan=False, check_circular=False))
    with pytest.raises(ValueError, match="Out of range float"):
        strict([math.inf])


def test_a_cyclic_value_raises_recursion_error() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(RecursionError):
        text_encoder(json.JSONEncoder(check_circular=False))(cyclic)


def test_an_encoder_that_checks_for_cycles_is_refused() -> None:
    with pytest.raises(ValueError, match="check_circular=False"):
        text_encoder(json.JSONEncoder())


def test_without_the_c_encoder_it_is_the_encoders_own_encode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    settings_ = json.JSONEncoder(sort_keys=True, check_circular=False)
    encode = text_encoder(settings_)
    assert encode == settings_.encode
    assert encode({"b": 1, "a": [1, 2]}) == '{"a": [1, 2], "b": 1}'
