"""The example application's stock and balances read back (strongly consistent); the generic
readers (`scan_items`, `get_item`, `plain`, `scan_plain`) are the tools' own
(`lambda_inbox_tools.services.items`), re-exported here for the tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lambda_inbox_tools.services.items import get_item, plain, scan_items, scan_plain

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["balance_of", "balances", "get_item", "plain", "scan_items", "scan_plain", "stock_of"]


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
