"""Limits, errors and DynamoDB attribute values of the in-memory AWS: sizes, validity, order."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from lambda_inbox.store import item_size as item_size

if TYPE_CHECKING:
    pass

#: DynamoDB: the largest item, in bytes (attribute names and values).

MAX_ITEM_BYTES = 400 * 1024
#: DynamoDB: actions per TransactWriteItems; keys per BatchGetItem.
MAX_TRANSACTION_ACTIONS = 100
MAX_BATCH_GET_KEYS = 100
MAX_BATCH_WRITE_REQUESTS = 25
#: SQS: how long a FIFO queue remembers a deduplication id, in seconds.
FIFO_DEDUPLICATION_SECONDS = 300

_PARAMS = "memory_aws_params"
Item = dict[str, Any]


class MemoryAwsError(Exception):
    """An error answer: the service's error code and message (botocore raises its class)."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.extra = extra


def _validation(message: str) -> MemoryAwsError:
    return MemoryAwsError("ValidationException", message)


# ---- attribute values ---------------------------------------------------------------------------


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for name, inner in value.items():
            yield str(name)
            yield from _texts(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _texts(inner)


def _check_item(item: Mapping[str, Any]) -> None:
    for text in _texts(item):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise _validation("a string is not valid UTF-8") from None
    size = item_size(item)
    if size > MAX_ITEM_BYTES:
        raise _validation(f"Item size has exceeded the maximum allowed size ({size} bytes)")


def _comparable(value: Mapping[str, Any] | None) -> tuple[str, Any] | None:
    if value is None:
        return None
    ((kind, inner),) = value.items()
    if kind == "N":
        from decimal import Decimal

        return kind, Decimal(str(inner))
    if kind == "S":
        return kind, str(inner).encode("utf-8", "surrogatepass")
    return kind, inner
