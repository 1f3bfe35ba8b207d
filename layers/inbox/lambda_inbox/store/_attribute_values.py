"""Python values to DynamoDB attribute values and back, and their sizes: each DynamoDB type's
rule once.

Strings, integers, booleans, None, and dicts and lists of them (what handlers write nearly
always) are serialized here, each value's size counted on the way; every other value (Decimal,
bytes, sets, tuples, other mappings and sequences) goes to boto3's `TypeSerializer`, which
also produces every error message, and is sized by `attribute_size`. `text_size` and
`number_size` are the size rules of strings and numbers, used by both.

`read_attribute_value` reads DynamoDB JSON as an event carries it (a stream image: binary as
base64 text) into plain Python values, checking each type's value: a value that is not valid
DynamoDB JSON raises `MalformedAttributeValue`, never becomes a wrong Python value.

Sizes follow DynamoDB's rules closely enough to plan its limits (400 KB per item, 4 MB per
transaction): UTF-8 bytes of names and strings, about one byte per two digits of a number.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from decimal import Decimal, DecimalException
from functools import cache
from itertools import chain
from typing import TYPE_CHECKING, Any

from lambda_inbox._errors import UnitOfWorkError

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


def text_size(text: str) -> int:
    """DynamoDB's size of a string or an attribute name: its UTF-8 bytes. Raises
    UnicodeEncodeError for text DynamoDB cannot store (a lone surrogate)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def number_size(text: str) -> int:
    """DynamoDB's size of a number, from its text: one byte per two significant digits, plus
    one (AWS's DynamoDB developer guide, "Item sizes and formats"). Counted here over the whole
    text (a sign, a point, zeroes at either end count as digits) and rounded up: an upper bound,
    so that a plan never undercounts, at no cost for the integers every batch writes."""
    return len(text) // 2 + 2


def sized(value: Any) -> tuple[dict[str, Any], int]:
    """The attribute value of `value` and its size; raises one of SIZING_ERRORS for a value
    DynamoDB cannot store (callers name it with `value_error`)."""
    kind = type(value)
    if kind is str:
        return {"S": value}, text_size(value)
    if kind is int and EXACT_INT_LOWER < value < EXACT_INT_BOUND:
        text = f"{value}"
        return {"N": text}, number_size(text)
    if kind is dict:
        members: dict[str, Any] = {}
        size = 3
        for name, member in value.items():
            if type(name) is not str:
                raise TypeError(f"map keys must be strings, not {type(name).__name__}")
            members[name], member_size = sized(member)
            size += text_size(name) + member_size + 1
        return {"M": members}, size
    if kind is list:
        elements = []
        size = 3
        for element in value:
            serialized, element_size = sized(element)
            elements.append(serialized)
            size += element_size + 1
        return {"L": elements}, size
    if kind is bool:
        return {"BOOL": value}, 1
    if value is None:
        return {"NULL": True}, 1
    # Decimal, bytes, sets, tuples, other mappings and sequences: boto3's rules and messages.
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


class MalformedAttributeValue(ValueError):
    """A DynamoDB JSON attribute value of the wrong shape; the message names where and why."""


def read_attribute_value(value: object, where: str = "$") -> Any:
    """One attribute value of DynamoDB JSON as an event carries it, in plain Python values:
    strings, `Decimal` numbers, `bytes` (from base64), booleans, None, lists, dicts, and sets of
    strings, numbers or bytes. `where` names the value in the error."""
    if not isinstance(value, Mapping) or len(value) != 1:
        raise MalformedAttributeValue(f"{where}: an attribute value is an object with one type key")
    ((kind, inner),) = value.items()
    reader = _READERS.get(kind)
    if reader is None:
        raise MalformedAttributeValue(f"{where}: unknown type {str(kind)[:20]!r}")
    return reader(inner, f"{where}.{kind}")


def read_image(image: object, where: str) -> dict[str, Any]:
    """An item image (`Keys`, `NewImage`, `OldImage`): attribute names to plain values."""
    if not isinstance(image, Mapping):
        raise MalformedAttributeValue(f"{where}: an image is an object, not {type(image).__name__}")
    return {str(name): read_attribute_value(v, f"{where}.{name}") for name, v in image.items()}


def _string(inner: object, where: str) -> str:
    if type(inner) is not str:
        raise MalformedAttributeValue(f"{where}: a string, not {type(inner).__name__}")
    return inner


def _number(inner: object, where: str) -> Decimal:
    from boto3.dynamodb.types import DYNAMODB_CONTEXT  # 38 digits, 1E-130 to 9.9E+125

    try:
        number = DYNAMODB_CONTEXT.create_decimal(_string(inner, where))
    except DecimalException:
        number = Decimal("NaN")  # not a number, or beyond DynamoDB's range or precision
    if not number.is_finite():
        raise MalformedAttributeValue(f"{where}: not a DynamoDB number")
    return number


def _binary(inner: object, where: str) -> bytes:
    text = _string(inner, where)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise MalformedAttributeValue(f"{where}: not base64") from None


def _boolean(inner: object, where: str) -> bool:
    if type(inner) is not bool:
        raise MalformedAttributeValue(f"{where}: true or false, not {type(inner).__name__}")
    return inner


def _null(inner: object, where: str) -> None:
    if inner is not True:
        raise MalformedAttributeValue(f"{where}: NULL is always true")


def _list(inner: object, where: str) -> list[Any]:
    if not isinstance(inner, list):
        raise MalformedAttributeValue(f"{where}: a list, not {type(inner).__name__}")
    return [read_attribute_value(member, f"{where}[{i}]") for i, member in enumerate(inner)]


def _map(inner: object, where: str) -> dict[str, Any]:
    return read_image(inner, where)


def _set_of(member: Callable[[object, str], Any]) -> Callable[[object, str], set[Any]]:
    def read(inner: object, where: str) -> set[Any]:
        if not isinstance(inner, list):
            raise MalformedAttributeValue(f"{where}: a set is a list, not {type(inner).__name__}")
        return {member(element, f"{where}[{i}]") for i, element in enumerate(inner)}

    return read


#: Each DynamoDB type's reader: the one place its JSON value is checked.
_READERS: dict[str, Callable[[object, str], Any]] = {
    "S": _string,
    "N": _number,
    "B": _binary,
    "BOOL": _boolean,
    "NULL": _null,
    "L": _list,
    "M": _map,
    "SS": _set_of(_string),
    "NS": _set_of(_number),
    "BS": _set_of(_binary),
}


def item_size(item: Mapping[str, Any]) -> int:
    """DynamoDB's size of an item (DynamoDB JSON): its attribute names and values, in bytes."""
    return sum(text_size(name) + attribute_size(value) for name, value in item.items())


def attribute_size(value: Mapping[str, Any]) -> int:
    """DynamoDB's size of one serialized attribute value."""
    (kind, inner), *_ = value.items()
    if kind == "S":
        return text_size(inner)
    if kind == "B":
        return len(inner)
    if kind == "N":
        return number_size(str(inner))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(attribute_size({kind[0]: member}) for member in inner)
    if kind == "L":
        return 3 + sum(attribute_size(member) + 1 for member in inner)
    return 3 + sum(text_size(name) + attribute_size(v) + 1 for name, v in inner.items())


#: Names one item: its table, then each key attribute's name and value, in name order.
ItemIdentity = tuple[object, ...]


def item_identity(table: str, key: Mapping[str, Any]) -> ItemIdentity:
    """Names the item `key` (Python values: strings, numbers, bytes) designates in `table`, for
    the rule of one action per item: equal for equal keys whatever their attribute order, and
    for numbers DynamoDB holds as one (`1`, `Decimal("1.0")`); distinct otherwise (a number
    and a string, a string and bytes, a partition key alone and with a sort key)."""
    return (table, *chain.from_iterable(sorted(key.items())))
