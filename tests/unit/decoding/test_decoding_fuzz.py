"""The decoders' bounds, generated (Hypothesis; lambda_inbox._decoding): each count is the
document's own, and a limit refuses exactly what passes it, both ways. `DECODING_FUZZ_EXAMPLES`
examples per property (default 50; `make check` caps them at 30, `make soak` runs 1,000)."""

from __future__ import annotations

import io
import json
import os
import zlib
from typing import Any

import pytest
from avro.io import BinaryDecoder, BinaryEncoder, DatumReader, DatumWriter
from avro.schema import parse
from hypothesis import given, settings
from hypothesis import strategies as st

from devkit.hostile import holder_class
from lambda_inbox._decoding.avro_reader import _BoundedReader
from lambda_inbox._decoding.limits import Budget, DecodingLimits, TooLarge, inflate, json_values
from lambda_inbox._decoding.protobuf_count import count_values
from lambda_inbox._internal.deadline import DECODING

EXAMPLES = settings(max_examples=int(os.environ.get("DECODING_FUZZ_EXAMPLES", "50")))

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(), inner, max_size=6),
    max_leaves=40,
)


def values_of(document: Any) -> int:
    """Each number, string, boolean, null, array and object of a document (keys not counted)."""
    if isinstance(document, list):
        return 1 + sum(values_of(item) for item in document)
    if isinstance(document, dict):
        return 1 + sum(values_of(item) for item in document.values())
    return 1


@EXAMPLES
@given(
    document=documents,
    indent=st.none() | st.integers(0, 3),
    ascii_only=st.booleans(),
    compact=st.booleans(),
)
def test_json_values_are_counted_exactly_without_parsing(
    document: Any, indent: int | None, ascii_only: bool, compact: bool
) -> None:
    separators = (",", ":") if compact else None
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only, separators=separators)
    assert json_values(text.encode("utf-8", errors="surrogatepass")) == values_of(document)


# ---- Avro: nested arrays and maps of nulls, ints and strings --------------------------------


@st.composite
def avro_datum(draw: st.DrawFn, depth: int = 0) -> tuple[Any, Any]:
    """(schema, datum) of nested arrays and maps."""
    kind = draw(
        st.sampled_from(["null", "int", "string"] + (["array", "map"] if depth < 3 else []))
    )
    if kind == "null":
        return "null", None
    if kind == "int":
        return "int", draw(st.integers(-(2**31), 2**31 - 1))
    if kind == "string":
        return "string", draw(st.text(max_size=8))
    item_schema, _ = draw(avro_datum(depth + 1))
    count = draw(st.integers(0, 5))
    items = [draw(typed(item_schema, depth + 1)) for _ in range(count)]
    if kind == "array":
        return {"type": "array", "items": item_schema}, items
    keys = draw(st.lists(st.text(max_size=4), min_size=count, max_size=count, unique=True))
    return {"type": "map", "values": item_schema}, dict(zip(keys, items, strict=True))


@st.composite
def typed(draw: st.DrawFn, schema: Any, depth: int) -> Any:
    """A datum of `schema` (as `avro_datum` makes them)."""
    if schema == "null":
        return None
    if schema == "int":
        return draw(st.integers(-(2**31), 2**31 - 1))
    if schema == "string":
        return draw(st.text(max_size=8))
    count = draw(st.integers(0, 5))
    if schema["type"] == "array":
        return [draw(typed(schema["items"], depth + 1)) for _ in range(count)]
    keys = draw(st.lists(st.text(max_size=4), min_size=count, max_size=count, unique=True))
    return {key: draw(typed(schema["values"], depth + 1)) for key in keys}


@EXAMPLES
@given(pair=avro_datum(), slack=st.integers(-3, 3))
def test_avro_reads_as_avro_does_within_the_limit_and_refuses_past_it(
    pair: tuple[Any, Any], slack: int
) -> None:
    schema_json, datum = pair
    schema = parse(json.dumps(schema_json))
    buffer = io.BytesIO()
    DatumWriter(schema).write(datum, BinaryEncoder(buffer))
    record = buffer.getvalue()
    limit = max(1, values_of(datum) + slack)
    reader = _BoundedReader(schema, Budget(limit))
    if values_of(datum) <= limit:
        expected = DatumReader(schema).read(BinaryDecoder(io.BytesIO(record)))
        assert reader.read(BinaryDecoder(io.BytesIO(record))) == expected == datum
    else:
        with pytest.raises(TooLarge):
            reader.read(BinaryDecoder(io.BytesIO(record)))


# ---- Protobuf: Holder { id, items, flags, child } --------------------------------------------


@st.composite
def holders(draw: st.DrawFn, depth: int = 0) -> tuple[Any, int]:
    """A `Holder` and the fields and elements it holds on the wire."""
    message = holder_class()(
        id=draw(st.text(max_size=6)),
        flags=draw(st.lists(st.booleans(), max_size=300)),
    )
    for _ in range(draw(st.integers(0, 40))):
        message.items.add()
    values = (1 if message.id else 0) + len(message.flags) + len(message.items)
    if depth < 3 and draw(st.booleans()):
        child, inside = draw(holders(depth + 1))
        message.child.CopyFrom(child)
        values += 1 + inside
    return message, values


@EXAMPLES
@given(pair=holders(), slack=st.integers(-3, 3))
def test_protobuf_values_are_counted_on_the_wire_exactly(pair: tuple[Any, int], slack: int) -> None:
    message, values = pair
    record = message.SerializeToString()
    limit = max(1, values + slack)
    budget = Budget(limit)
    if values <= limit:
        count_values(record, message.DESCRIPTOR, budget)
        assert budget.values == values
    else:
        with pytest.raises(TooLarge):
            count_values(record, message.DESCRIPTOR, budget)


# ---- zlib ---------------------------------------------------------------------------------------

MAX_BYTES = 64 * 1024


@EXAMPLES
@given(size=st.integers(0, 2 * MAX_BYTES), pattern=st.binary(min_size=1, max_size=64))
def test_zlib_inflates_what_is_within_max_bytes_and_refuses_the_rest(
    size: int, pattern: bytes
) -> None:
    raw = (pattern * (size // len(pattern) + 1))[:size]
    compressed = zlib.compress(raw)
    token = DECODING.set((DecodingLimits(max_bytes=MAX_BYTES), None, None))
    try:
        if size <= MAX_BYTES:
            assert inflate(compressed) == raw
        else:
            with pytest.raises(TooLarge):
                inflate(compressed)
    finally:
        DECODING.reset(token)
