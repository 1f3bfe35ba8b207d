"""JSON text from an encoder made once.

`json.JSONEncoder.encode` makes a new C encoder (`json.encoder.c_make_encoder`) on every call,
and making it costs several times what encoding the small documents the inbox writes for every
message does (the fingerprint's canonical form, the handler's result, an outbox body).
`text_encoder` makes it once, from a `JSONEncoder`'s settings, and returns a function that gives
the text that encoder's `encode` gives (`tests/unit/test_json_text.py` compares them). Where the
interpreter has no C encoder, it returns `encode` itself.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any


def text_encoder(settings: json.JSONEncoder) -> Callable[[Any], str]:
    """`settings.encode`, with its C encoder made once. `settings` must not check for cycles
    (`check_circular=False`): a cyclic value then raises `RecursionError`."""
    if settings.check_circular:
        raise ValueError("text_encoder: make the JSONEncoder with check_circular=False")
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None or settings.indent is not None:
        return settings.encode
    encode_string: Callable[[str], str] = (
        json.encoder.encode_basestring_ascii
        if settings.ensure_ascii
        else json.encoder.encode_basestring
    )
    chunks = make_encoder(
        None,  # no cycle check (its memo)
        settings.default,
        encode_string,
        None,  # no indent
        settings.key_separator,
        settings.item_separator,
        settings.sort_keys,
        settings.skipkeys,
        settings.allow_nan,
    )

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode
