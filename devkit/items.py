"""Reading DynamoDB items back, on moto or DynamoDB Local: whole tables, single items, plain
Python values, and the example application's stock and balances. Reads are strongly
consistent."""

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


def stock_of(client: DynamoDBClient, table: str, sku: str) -> tuple[int, int] | None:
    """(available, reserved) of a SKU's `SKU#{sku}` / `STOCK` item, None when it has none."""
    item = get_item(client, table, {"pk": f"SKU#{sku}", "sk": "STOCK"})
    if item is None:
        return None
    reserved = item.get("reserved", {"N": "0"})
    return int(item["available"]["N"]), int(reserved["N"])


def balance_of(client: DynamoDBClient, table: str, customer: str) -> tuple[int, int]:
    """(balance_cents, payments) of a customer's `CUSTOMER#{id}` / `BALANCE` item; (0, 0) when it
    has none."""
    item = get_item(client, table, {"pk": f"CUSTOMER#{customer}", "sk": "BALANCE"})
    if item is None:
        return (0, 0)
    return int(item["balance_cents"]["N"]), int(item["payments"]["N"])


def balances(client: DynamoDBClient, table: str) -> dict[str, tuple[int, int]]:
    """(balance_cents, payments) of every customer with a `BALANCE` item, by customer id."""
    return {
        item["pk"]["S"].removeprefix("CUSTOMER#"): (
            int(item["balance_cents"]["N"]),
            int(item["payments"]["N"]),
        )
        for item in scan_items(client, table)
        if item["sk"]["S"] == "BALANCE"
    }
