"""In-memory DynamoDB tables and SQS queues."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lambda_inbox_tools.services.offline import ACCOUNT, REGION

from .values import Item, _validation

if TYPE_CHECKING:
    pass

#: DynamoDB: the largest item, in bytes (attribute names and values).

# ---- tables ---------------------------------------------------------------------------------


@dataclass
class MemoryTable:
    name: str
    key_names: tuple[str, ...]
    key_types: tuple[str, ...]
    items: dict[tuple[Any, ...], Item] = field(default_factory=dict)
    #: `UpdateTimeToLive`'s last specification (nothing expires: the testing kit's check emulates
    #: TTL over any backend).
    ttl: dict[str, Any] | None = None

    def key_of(self, item: Mapping[str, Any], *, what: str = "item") -> tuple[Any, ...]:
        key: list[Any] = []
        for name, kind in zip(self.key_names, self.key_types, strict=True):
            value = item.get(name)
            if not isinstance(value, Mapping) or set(value) != {kind}:
                raise _validation(
                    f"One or more parameter values were invalid: Missing the key {name} "
                    f"(type {kind}) in the {what}"
                )
            inner = value[kind]
            if inner in ("", b""):
                raise _validation(
                    "One or more parameter values are not valid. The AttributeValue for a key "
                    f"attribute cannot contain an empty {kind} value. Key: {name}"
                )
            key.append(inner)
        return tuple(key)

    def description(self) -> dict[str, Any]:
        return {
            "TableName": self.name,
            "TableStatus": "ACTIVE",
            "TableArn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{self.name}",
            "KeySchema": [
                {"AttributeName": name, "KeyType": kind}
                for name, kind in zip(self.key_names, ("HASH", "RANGE"), strict=False)
            ],
            "ItemCount": len(self.items),
        }


def _project(item: Item, request: Mapping[str, Any]) -> Item:
    projection = request.get("ProjectionExpression")
    if not projection:
        return dict(item)
    names: Mapping[str, str] = request.get("ExpressionAttributeNames") or {}
    wanted = set()
    for part in projection.split(","):
        token = part.strip()
        if "." in token or "[" in token:
            raise NotImplementedError(f"memory DynamoDB: nested projection {token!r}")
        wanted.add(names.get(token, token))
    return {name: value for name, value in item.items() if name in wanted}


# ---- queues ---------------------------------------------------------------------------------


@dataclass
class MemoryQueue:
    name: str
    url: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    deduplication: dict[str, float] = field(default_factory=dict)

    @property
    def fifo(self) -> bool:
        return self.name.endswith(".fifo")


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _attributes_md5(attributes: Mapping[str, Any]) -> str:
    """SQS's MD5 of message attributes (names sorted, length-prefixed fields)."""
    encoded = b""
    for name in sorted(attributes):
        value = attributes[name]
        data_type = value["DataType"]
        for part in (name.encode("utf-8"), data_type.encode("utf-8")):
            encoded += len(part).to_bytes(4, "big") + part
        if "BinaryValue" in value:
            raw = bytes(value["BinaryValue"])
            encoded += b"\x02" + len(raw).to_bytes(4, "big") + raw
        else:
            raw = str(value["StringValue"]).encode("utf-8")
            encoded += b"\x01" + len(raw).to_bytes(4, "big") + raw
    return _md5(encoded)
