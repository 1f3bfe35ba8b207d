"""Decoding within limits (`limits`): what one record may cost to read. This module holds what
the rest of the library reads on every invocation; the decoders load on first use."""

from contextvars import ContextVar
from typing import Any

#: The limits and the deadline of the invocation under way, for the decoders (`limits`):
#: `(DecodingLimits or None, Deadline or None, seconds the invocation had or None)`, set by
#: `InboxConsumer.handle` and `process`.
DECODING: ContextVar[tuple[Any, Any, float | None] | None] = ContextVar(
    "lambda_inbox_decoding", default=None
)
#: Documents of at most this many bytes are within any `DecodingLimits`: only larger ones are
#: checked before they are parsed.
UNCHECKED_BYTES = 8 * 1024
