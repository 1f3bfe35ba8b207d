"""Outbox items as the inbox table's stream shows them, made the way a handler makes them."""

from __future__ import annotations

from typing import Any

from lambda_inbox import UnitOfWork


def outbox_image(
    message_id: str, destination: str, body: str = '{"n":1}', **fields: Any
) -> dict[str, Any]:
    """The stored outbox item (DynamoDB JSON) that `UnitOfWork.outbox` writes for these fields."""
    uow = UnitOfWork()
    uow.outbox("domain", destination=destination, body=body, message_id=message_id, **fields)
    item: dict[str, Any] = uow.actions[0].request["Item"]
    return item
