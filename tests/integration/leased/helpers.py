"""Small helpers of the leased-mode and reaper tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from devkit.items import plain, scan_items
from lambda_inbox_tools.services.queues import receive_all

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

    from devkit.tables import LocalTables


def drain(sqs: SQSClient, queue_url: str) -> list[MessageTypeDef]:
    """Every message in a queue, with its attributes (deleted once received)."""
    return receive_all(sqs, queue_url, delete=True)


def attribute(message: MessageTypeDef, name: str) -> str:
    return str(message.get("MessageAttributes", {})[name]["StringValue"])


def scan(tables: LocalTables, table: str) -> list[dict[str, Any]]:
    """Every item of `table` as plain values."""
    return [plain(item) for item in scan_items(tables.client, table)]
