"""An Avro record read within the limits (`limits`): avro's `DatumReader`, each value counted,
and each block of an array or a map counted before its items are read, so a block claiming
millions of items (an array of nulls costs no byte per item) is refused at once, not after it
has been built. Loaded by the first Avro value.
"""

from __future__ import annotations

import io
from functools import lru_cache

from avro.io import BinaryDecoder, DatumReader
from avro.schema import ArraySchema, MapSchema, Schema, parse

from lambda_inbox._decoding.limits import Budget, check_bytes


@lru_cache(maxsize=16)
def parsed_schema(text: str) -> Schema:
    """The schema of a consumer's `ValueFormats`, parsed once."""
    return parse(text)


def read_avro(schema: str, record: bytes) -> object:
    """The record's document; `TooLarge` past a limit, avro's errors for a record that does
    not decode."""
    check_bytes(len(record), "the Avro record")
    reader = _BoundedReader(parsed_schema(schema), Budget())
    return reader.read(BinaryDecoder(io.BytesIO(record)))


class _BoundedReader(DatumReader):
    """avro's reader, counting what it reads (the module docstring). Arrays and maps are read
    as the specification encodes them (blocks of items, each block's count first; a negative
    count is followed by the block's size in bytes), with the count checked first."""

    def __init__(self, schema: Schema, budget: Budget) -> None:
        super().__init__(schema)
        self._budget = budget

    def read_data(
        self, writers_schema: Schema, readers_schema: Schema, decoder: BinaryDecoder
    ) -> object:
        self._budget.spend()
        return super().read_data(writers_schema, readers_schema, decoder)

    def read_array(
        self, writers_schema: ArraySchema, readers_schema: ArraySchema, decoder: BinaryDecoder
    ) -> list[object]:
        items: list[object] = []
        count = self._block(decoder)
        while count:
            for _ in range(count):
                items.append(self.read_data(writers_schema.items, readers_schema.items, decoder))
            count = self._block(decoder)
        return items

    def read_map(
        self, writers_schema: MapSchema, readers_schema: MapSchema, decoder: BinaryDecoder
    ) -> dict[str, object]:
        entries: dict[str, object] = {}
        count = self._block(decoder)
        while count:
            for _ in range(count):
                key = decoder.read_utf8()
                entries[key] = self.read_data(writers_schema.values, readers_schema.values, decoder)
            count = self._block(decoder)
        return entries

    def _block(self, decoder: BinaryDecoder) -> int:
        count = decoder.read_long()
        if count < 0:
            count = -count
            decoder.skip_long()
        self._budget.reserve(count)
        return count
