"""Which tables a failed request named, and where the function got their names: a missing or
misnamed table is reported as `'orders-prod' (ORDERS_TABLE)`, so the fix (the environment
variable, the template's parameter) is in the message, not only `Requested resource not found`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

MISSING_TABLE = "ResourceNotFoundException"


def named(table: str) -> str:
    """`'orders-prod' (ORDERS_TABLE)`: the table and the environment variables set to its name
    (none: the name was given in code)."""
    variables = sorted(name for name, value in os.environ.items() if value == table)
    return f"{table!r} ({', '.join(variables)})" if variables else repr(table)


def described(error: Exception, tables: Iterable[str]) -> str:
    """`error` as text; for a missing table, which of `tables` the request used and where their
    names came from (DynamoDB's error does not say which table it did not find)."""
    text = str(error)
    response: Mapping[str, Any] = getattr(error, "response", None) or {}
    if response.get("Error", {}).get("Code") != MISSING_TABLE:
        return text
    names = " or ".join(named(table) for table in sorted(set(tables)))
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    where = f" in {region}" if region else ""
    return (
        f"{text}: table {names} does not exist{where} for this account, "
        "or the function may not use it"
    )


def tables_of(transact_items: Iterable[Mapping[str, Any]]) -> list[str]:
    """The tables a `TransactWriteItems` request writes or checks."""
    return [str(body["TableName"]) for item in transact_items for body in item.values()]
