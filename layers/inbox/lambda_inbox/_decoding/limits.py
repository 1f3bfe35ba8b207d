"""Decoding within limits: what one record may cost to read, and `too_large` past it.

A sender chooses the bytes; a few of them can decode into millions of values (an Avro array of
nulls, Protobuf's empty sub-messages, a zlib stream of zeros). Every decoder of the inbox stops
at the limits of `DecodingLimits`, and the record is then poison with the code `too_large`
(`TooLarge`): dead-lettered with the bytes as delivered, the rest of the batch going on.

- `max_bytes`: the bytes a JSON document, an Avro or a Protobuf record may have, and the bytes
  a `zlib+base64` dead-letter body may inflate into (never inflated further). Base64 (Kafka
  values, Kinesis data, dead-letter bodies) gives three bytes for four characters of an event
  Lambda caps at 6 MB; what it gives is held to `max_bytes` by whichever of these reads it.
- `max_values`: the values one document may hold: each number, string, boolean, null, array and
  object (JSON; Avro's arrays, maps, records and their fields; Protobuf's fields and elements).
  JSON is counted before it is parsed (only a document of at least `2 * max_values` bytes can
  hold more), Avro while it is read (each block's count before its items), Protobuf on the wire
  before it is parsed (only a record of more than `max_values` bytes can hold more).
- time: reading stops at the Lambda deadline, and the record is then reported for redelivery
  like any unfinished work. A record whose reading began with at least half the invocation's
  time ahead of it stops once it has used half of it: it would not fit in any invocation, so it
  is `too_large` (with time left to dead-letter it).

Defaults fit a 128 MB function: 6 MiB (Lambda's invocation payload limit, so nothing Lambda can
deliver is refused for its size alone) and 100,000 values (about 5 to 10 MB of Python objects).
`InboxConsumer.handle` and `process` put the consumer's limits and the invocation's deadline in
`deadline.DECODING` for the decoders to read. Loaded by the first record that needs a check.
"""

from __future__ import annotations

import re
import zlib
from typing import TYPE_CHECKING

from lambda_inbox._errors import ConfigurationError, ErrorCode, UndecodableBody
from lambda_inbox._internal import _Settings
from lambda_inbox._internal.deadline import DECODING

if TYPE_CHECKING:
    from lambda_inbox._internal.deadline import Clock

#: The smallest limits allowed: they hold every document of `messages.UNCHECKED_BYTES` (8 KiB
#: hold 4,096 values at most), which is therefore never checked
#: (tests/unit/decoding/test_decoding_limits.py holds the two together).
MIN_BYTES = 64 * 1024
MIN_VALUES = 4 * 1024
#: Values read between two looks at the clock.
_CLOCK_EVERY = 1024
#: A JSON string, escapes and all (strings are where the structure's characters may also be).
_JSON_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_JSON_SPACE = b" \t\n\r"


class DecodingLimits(_Settings):
    """What one record may cost to decode (the module docstring): `max_bytes` it may decode
    into and `max_values` its document may hold. Past either, the record is dead-lettered with
    `too_large`. `SourceSettings(decoding_limits=DecodingLimits(...))` sets them for a consumer."""

    __slots__ = ("max_bytes", "max_values")

    def __init__(self, max_bytes: int = 6 * 1024 * 1024, max_values: int = 100_000) -> None:
        if max_bytes < MIN_BYTES or max_values < MIN_VALUES:
            raise ConfigurationError(
                f"DecodingLimits needs max_bytes >= {MIN_BYTES} and max_values >= {MIN_VALUES}: "
                "smaller limits would refuse ordinary messages"
            )
        self.max_bytes = max_bytes
        self.max_values = max_values


DEFAULT_LIMITS = DecodingLimits()


class TooLarge(UndecodableBody):
    """Poison: decoding the record would pass a limit of `DecodingLimits`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, code=ErrorCode.TOO_LARGE)


def current_limits() -> DecodingLimits:
    """The limits of the consumer whose invocation is running (the defaults outside one)."""
    decoding = DECODING.get()
    limits = decoding[0] if decoding is not None else None
    return limits if isinstance(limits, DecodingLimits) else DEFAULT_LIMITS


def check_bytes(size: int, what: str) -> None:
    """`TooLarge` when `size` bytes pass `max_bytes`."""
    limit = current_limits().max_bytes
    if size > limit:
        raise TooLarge(f"{what} is {size:,} bytes, more than {limit:,} (DecodingLimits.max_bytes)")


def check_json(body: bytes) -> None:
    """`TooLarge` when a JSON document passes `max_bytes` or holds more than `max_values`
    values, counted without parsing it. In valid JSON a string is the only place the characters
    of the structure can stand for something else, and every value but the first follows a
    comma or opens an array or object, except in an empty one; an invalid document is left to
    the parser, which refuses it."""
    limits = current_limits()
    check_bytes(len(body), "the JSON document")
    if len(body) < 2 * limits.max_values:  # n bytes hold at most (n + 1) / 2 values
        return
    values = json_values(body)
    if values > limits.max_values:
        raise TooLarge(
            f"the JSON document holds {values:,} values, more than {limits.max_values:,} "
            "(DecodingLimits.max_values)"
        )


def json_values(body: bytes) -> int:
    """The values of a valid JSON document (`check_json`), counted without parsing it."""
    structure = re.sub(_JSON_STRING, b'""', body).translate(None, _JSON_SPACE)
    return (
        1
        + structure.count(b",")
        + structure.count(b"[")
        + structure.count(b"{")
        - structure.count(b"[]")
        - structure.count(b"{}")
    )


def inflate(data: bytes) -> bytes:
    """A zlib stream's bytes, refused with `TooLarge` once they pass `max_bytes` (never
    inflated further); `zlib.error` for a stream that is not zlib or is cut short."""
    limit = current_limits().max_bytes
    stream = zlib.decompressobj()
    inflated = stream.decompress(data, limit + 1)
    if len(inflated) <= limit and not stream.unconsumed_tail:
        inflated += stream.flush()
    if len(inflated) > limit or stream.unconsumed_tail:
        raise TooLarge(
            f"the compressed body inflates past {limit:,} bytes (DecodingLimits.max_bytes)"
        )
    if not stream.eof:
        raise zlib.error("the compressed body is cut short")
    return inflated


class Budget:
    """One record's reading: the values it has produced against `max_values` (or `limit`), and
    its time (the module docstring). The decoders call `spend` for every value they produce,
    and `reserve` for a block of values before they read it."""

    __slots__ = ("_alone", "_clock", "_limit", "_next_look", "_stop_at", "values")

    def __init__(self, limit: int | None = None) -> None:
        decoding = DECODING.get()
        self._limit = current_limits().max_values if limit is None else limit
        self.values = 0
        self._next_look = _CLOCK_EVERY
        self._stop_at: float | None = None
        self._alone = False
        self._clock: Clock | None = None
        _, deadline, budget = decoding if decoding is not None else (None, None, None)
        left = deadline.left() if deadline is not None else None
        if deadline is not None and left is not None:
            budget = budget or left
            self._clock = deadline.clock
            self._alone = left >= budget / 2
            now = deadline.clock.monotonic()
            self._stop_at = now + left / 2 if self._alone else now + left

    def spend(self, values: int = 1) -> None:
        """Count `values` more; `TooLarge` past the limit or the time (module docstring)."""
        self.values += values
        if self.values > self._limit:
            raise self._too_many()
        if self.values >= self._next_look:
            self._next_look = self.values + _CLOCK_EVERY
            self.look_at_the_clock()

    def reserve(self, values: int) -> None:
        """`TooLarge` when `values` more (a block about to be read) would pass the limit."""
        if self.values + values > self._limit:
            raise self._too_many()

    def _too_many(self) -> TooLarge:
        return TooLarge(
            f"it decodes to more than {self._limit:,} values (DecodingLimits.max_values)"
        )

    def look_at_the_clock(self) -> None:
        """`TooLarge` once the record's time is up (module docstring)."""
        if self._clock is None or self._stop_at is None:
            return
        if self._clock.monotonic() >= self._stop_at:
            if self._alone:
                raise TooLarge("decoding it takes more than half of an invocation's time")
            # The deadline has passed: dead-lettering reports the record for redelivery instead.
            raise TooLarge("decoding it stopped at the Lambda deadline")
