"""Python values to DynamoDB attribute values, and their sizes, in one pass.

Strings, integers, booleans, None, and dicts and lists of them (what handlers write nearly
always) are serialized here, each value's size counted on the way; every other value (Decimal,
bytes, sets, tuples, other mappings and sequences) goes to boto3's `TypeSerializer`, which
also produces every error message, and its result is sized after. Both paths give the same
attribute values (`tests/unit/test_attribute_values.py` compares them on generated values).

Sizes follow DynamoDB's rules closely enough to plan its limits (400 KB per item, 4 MB per
transaction): UTF-8 bytes of names and strings, about one byte per two digits of a number.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import DecimalException
from functools import cache
from typing import TYPE_CHECKING, Any

from .errors import UnitOfWorkError

if TYPE_CHECKING:
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
#: Integers below this magnitude have at most 38 digits: DynamoDB stores them exactly.
EXACT_INT_BOUND = 10**38
#: Its negation, made once (`-EXACT_INT_BOUND` would make a new integer on every check).
EXACT_INT_LOWER = -EXACT_INT_BOUND


#: What `sized` raises for a value DynamoDB cannot store (`value_error` explains it).
SIZING_ERRORS = (TypeError, DecimalException, UnicodeEncodeError)


def value_error(where: str, value: Any, error: Exception) -> UnitOfWorkError:
    """What is wrong with `value`, that `sized` refused with `error` (one of SIZING_ERRORS)."""
    if isinstance(error, TypeError):
        hint = " (use int or Decimal for numbers)" if _holds_float(value) else ""
        return UnitOfWorkError(f"{where}: {error}{hint}")
    if isinstance(error, DecimalException):  # Inexact, Rounded, Overflow, Underflow
        return UnitOfWorkError(
            f"{where}: {type(error).__name__}: DynamoDB numbers have at most 38 significant "
            "digits, between 1E-130 and 9.9E+125"
        )
    return UnitOfWorkError(f"{where}: a string is not valid UTF-8 (a lone surrogate)")


def utf8_size(text: str) -> int:
    """The UTF-8 bytes of a name, a lone surrogate counted as its `surrogatepass` bytes (ASCII,
    nearly every name, is counted without encoding)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", errors="surrogatepass"))


def sized(value: Any) -> tuple[dict[str, Any], int]:
    """The attribute value of `value` and its size; raises one of SIZING_ERRORS for a value
    DynamoDB cannot store (callers name it with `value_error` only then: the hot path builds no
    message)."""
    kind = type(value)
    if kind is str:
        return {"S": value}, len(value) if value.isascii() else len(value.encode("utf-8"))
    if kind is int:
        if EXACT_INT_LOWER < value < EXACT_INT_BOUND:
            text = f"{value}"  # an exact int's text: cheaper than calling `str`
            return {"N": text}, len(text) // 2 + 2
    elif kind is dict:  # maps and lists before booleans and nulls: they are what comes here
        members: dict[str, Any] = {}
        size = 3
        for name, member in value.items():
            if type(name) is not str:
                raise TypeError(f"map keys must be strings, not {type(name).__name__}")
            name_size = len(name) if name.isascii() else len(name.encode("utf-8"))
            if type(member) is str and member.isascii():  # the common members: no call
                members[name] = {"S": member}
                size += name_size + len(member) + 1
            elif type(member) is int and EXACT_INT_LOWER < member < EXACT_INT_BOUND:
                text = f"{member}"
                members[name] = {"N": text}
                size += name_size + len(text) // 2 + 3
            else:
                members[name], member_size = sized(member)
                size += name_size + member_size + 1
        return {"M": members}, size
    elif kind is list:
        elements = []
        size = 3
        for element in value:
            serialized, element_size = sized(element)
            elements.append(serialized)
            size += element_size + 1
        return {"L": elements}, size
    elif kind is bool:
        return {"BOOL": value}, 1
    elif value is None:
        return {"NULL": True}, 1
    serialized = dict(_type_serializer().serialize(value))
    return serialized, attribute_size(serialized)


@cache
def _type_serializer() -> TypeSerializer:
    from boto3.dynamodb.types import TypeSerializer  # the values the fast path does not take

    return TypeSerializer()


@cache
def _type_deserializer() -> TypeDeserializer:
    from boto3.dynamodb.types import TypeDeserializer

    return TypeDeserializer()


def _holds_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, Mapping):
        return any(_holds_float(member) for member in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_float(member) for member in value)
    return False


def deserialize_item(item: Mapping[str, Any]) -> dict[str, Any]:
    deserializer = _type_deserializer()
    return {name: deserializer.deserialize(value) for name, value in item.items()}


def attribute_size(value: Mapping[str, Any]) -> int:
    """DynamoDB's size of one serialized attribute value."""
    (kind, inner), *_ = value.items()
    if kind in ("S", "B"):
        return len(inner.encode("utf-8")) if isinstance(inner, str) else len(inner)
    if kind == "N":
        return len(str(inner)) // 2 + 2
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(attribute_size({kind[0]: member}) for member in inner)
    if kind == "L":
        return 3 + sum(attribute_size(member) + 1 for member in inner)
    return 3 + sum(len(k.encode("utf-8")) + attribute_size(v) + 1 for k, v in inner.items())
