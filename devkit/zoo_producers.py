"""Zoo consumers whose inbox key is not the event's identity (devkit.zoo): a producer's retry
is the same event serialized again, with its volatile fields (`sent_at`) stamped anew.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import ClientError

from lambda_inbox_tools.testing import payload

from .zoo_ledger import OK, Ledger, cancelled_by_condition

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
#: What the zoo's producer stamps anew on every send.
VOLATILE = ("sent_at",)


def _raw(event: dict[str, Any]) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """(the payload's bytes as delivered, the message) of every record, in order."""
    if "Records" in event:
        for record in event["Records"]:
            if "body" in record:
                raw = record["body"].encode("utf-8")
            elif "kinesis" in record:
                raw = base64.b64decode(record["kinesis"]["data"])
            else:  # a stream record's image has no bytes of its own
                raw = json.dumps(record["dynamodb"]["NewImage"]).encode("utf-8")
            yield raw, payload(record)
        return
    for records in event["records"].values():
        for record in records:
            raw = base64.b64decode(record["value"])
            yield raw, json.loads(raw)


def _keyed(ledger: Ledger, key: Callable[[bytes, dict[str, Any]], str]) -> Handler:
    """A transactional inbox keyed by `key(bytes, message)`."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for raw, message in _raw(event):
            actions = [
                {"Put": ledger.mark(key(raw, message))},
                {"Update": ledger.effect(str(message["event_id"]))},
            ]
            try:
                ledger.dynamodb.transact_write_items(TransactItems=actions)
            except ClientError as error:
                if not cancelled_by_condition(error):
                    raise
        return OK

    return handler


def _digest(message: dict[str, Any]) -> str:
    canonical = json.dumps(message, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def keyed_by_body_hash(ledger: Ledger) -> Handler:
    """The inbox key is a hash of the payload's bytes."""
    return _keyed(ledger, lambda raw, message: hashlib.sha256(raw).hexdigest())


def keyed_by_event_hash(ledger: Ledger) -> Handler:
    """The inbox key is a hash of the parsed event (keys sorted), its `sent_at` included."""
    return _keyed(ledger, lambda raw, message: _digest(message))


def keyed_by_event_hash_without_volatile_fields(ledger: Ledger) -> Handler:
    """The same without the fields the producer stamps anew (the control)."""

    def key(raw: bytes, message: dict[str, Any]) -> str:
        return _digest({k: v for k, v in message.items() if k not in VOLATILE})

    return _keyed(ledger, key)
