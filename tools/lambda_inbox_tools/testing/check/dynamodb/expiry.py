"""What DynamoDB forgets with time, on backends that forget nothing (DynamoDB Local, moto, devkit's
memory DynamoDB), on the check's clock (`clock.CheckClock`):

- **TTL**: `expire()` deletes every item of the tables the clients touched whose TTL attribute
  (the table's `DescribeTimeToLive`) holds a number of epoch seconds below the clock, as
  DynamoDB's TTL does. DynamoDB deletes an expired item at some time within a few days of its
  expiry (its API reference: "typically ... within two days of expiration"), and reads return it
  until then; the check deletes it at the earliest, the moment it plays a late redelivery.
- **`ClientRequestToken`**: DynamoDB makes a `TransactWriteItems` with a token it has seen
  idempotent for 10 minutes only; past them on the clock, the token the consumer sends is
  replaced by a new one, which the backend has never seen.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from botocore.exceptions import ClientError

from ..clock import CheckClock

__all__ = ["TOKEN_SECONDS", "Expiry"]

#: How long DynamoDB keeps a transaction's `ClientRequestToken` (its API reference: 10 minutes).
TOKEN_SECONDS = 600.0
_EVENT = "before-parameter-build.dynamodb"


class Expiry:
    """Hooks on `clients` (until `remove()`): the tables they touch, the tokens they send."""

    def __init__(self, clients: Iterable[Any], clock: CheckClock) -> None:
        self.clock = clock
        #: Table name -> a client that reached it.
        self.tables: dict[str, Any] = {}
        #: The consumer's token -> (the token sent for it, when that one was first sent).
        self.tokens: dict[str, tuple[str, float]] = {}
        #: Table name -> its TTL attribute (None: TTL off) and key attribute names.
        self._described: dict[str, tuple[str | None, list[str]]] = {}
        self._hooks = [(client, functools.partial(self._seen, client)) for client in clients]
        for client, hook in self._hooks:
            client.meta.events.register(_EVENT, hook)

    def remove(self) -> None:
        for client, hook in self._hooks:
            client.meta.events.unregister(_EVENT, hook)

    def _seen(self, client: Any, params: dict[str, Any], model: Any, **_: Any) -> None:
        for table in _tables(params):
            self.tables.setdefault(table, client)
        token = params.get("ClientRequestToken")
        if model.name == "TransactWriteItems" and isinstance(token, str):
            now = self.clock()
            sent, since = self.tokens.get(token, (token, now))
            if now - since > TOKEN_SECONDS:  # DynamoDB no longer knows it
                sent, since = str(uuid.uuid4()), now
            self.tokens[token] = (sent, since)
            params["ClientRequestToken"] = sent

    def expire(self) -> int:
        """Deletes the items whose TTL lapsed on the clock; how many."""
        now = self.clock()
        removed = 0
        for table, client in list(self.tables.items()):
            if table not in self._described:
                self._described[table] = _ttl_and_key(client, table)
            attribute, names = self._described[table]
            if attribute is None:
                continue
            for item in list(_scan(client, table)):
                expires = item.get(attribute, {}).get("N")
                if expires is not None and float(expires) < now:
                    client.delete_item(TableName=table, Key={n: item[n] for n in names})
                    removed += 1
        return removed


def _tables(params: Mapping[str, Any]) -> Iterator[str]:
    if isinstance(params.get("TableName"), str):
        yield params["TableName"]
    yield from params.get("RequestItems") or {}
    for action in params.get("TransactItems") or []:
        for request in action.values():
            yield request["TableName"]


def _ttl_and_key(client: Any, table: str) -> tuple[str | None, list[str]]:
    """The table's TTL attribute (None when TTL is off or the table is gone) and key names."""
    try:
        described = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        if described.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
            return None, []
        schema = client.describe_table(TableName=table)["Table"]["KeySchema"]
    except ClientError:
        return None, []
    return str(described["AttributeName"]), [key["AttributeName"] for key in schema]


def _scan(client: Any, table: str) -> Iterator[dict[str, Any]]:
    request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**request)
        yield from page.get("Items", [])
        if not page.get("LastEvaluatedKey"):
            return
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
