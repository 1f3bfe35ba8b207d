"""Reading DynamoDB items back (DynamoDB Local, moto or AWS): whole tables, single items, and
items as plain Python values. Reads are strongly consistent."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_deserializer = TypeDeserializer()


def plain(item: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB item (attribute values) as Python values, numbers as int where integral."""

    def convert(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        if isinstance(value, list):
            return [convert(v) for v in value]
        if isinstance(value, Decimal):
            integral = int(value)
            return integral if integral == value else value
        return value

    return {name: convert(_deserializer.deserialize(raw)) for name, raw in item.items()}


def scan_items(client: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    """Every item of `table` (attribute values), all pages."""
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items.extend(dict(item) for item in page.get("Items", []))
    return items


def get_item(client: DynamoDBClient, table: str, key: Mapping[str, str]) -> dict[str, Any] | None:
    """The item with the string key `key` (e.g. {"pk": ..., "sk": ...}), None when absent."""
    item = client.get_item(
        TableName=table,
        Key={name: {"S": value} for name, value in key.items()},
        ConsistentRead=True,
    ).get("Item")
    return dict(item) if item else None


def scan_plain(client: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    """Every item of `table` as plain Python values (`plain`), all pages."""
    return [plain(item) for item in scan_items(client, table)]
