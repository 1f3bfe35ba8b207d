"""A producer's retry as producers really send it: the same event serialized again, its keys in
another order and other spacing, and the fields the producer stamps on every send (`volatile`:
a timestamp such as `sent_at`, a trace id) stamped anew.

The check sends every message it delivers under a new id through `retried` (a JSON object
payload: an SQS body, a Kafka value, a Kinesis record's data; anything else, such as Avro or
Protobuf bytes, goes again unchanged). A consumer that keys its inbox by a hash of the bytes,
or of the whole event with its volatile fields, takes the retry for a new event.

An SQS body that is an SNS notification (`sns_notification_id`) is not sent through `retried`:
its new SQS `messageId` is SNS's own redelivery, the same notification byte for byte, as SNS
delivers it again when it did not see the queue's acknowledgement (and as a redrive moves it). A
consumer that reads the notification (`InboxConsumer(..., envelope="sns")`) takes it for a
duplicate; one keyed by the SQS `messageId` applies it again.

An app names its volatile fields with `check_effectively_once(..., volatile=["sent_at",
"meta.trace_id"])`: dotted paths into the JSON object; a path the event does not hold is left
alone.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

__all__ = ["restamped", "retried", "sns_notification_id"]

#: (item separator, key separator, indent) of the serializations a retry is drawn from.
STYLES: tuple[tuple[str, str, int | None], ...] = (
    (",", ":", None),
    (", ", ": ", None),
    (",", ": ", 2),
    (", ", ":", None),
)


def retried(
    record: Mapping[str, Any], rng: random.Random, volatile: Sequence[str]
) -> dict[str, Any]:
    """`record` (a copy under a new id) with its JSON object payload sent again as a producer
    retry sends it (see the module); other payloads unchanged."""
    again: dict[str, Any] = copy.deepcopy(dict(record))
    if "body" in again:
        text = _again(again["body"].encode("utf-8"), rng, volatile)
        if text is not None:
            again["body"] = text.decode("utf-8")
            again["md5OfBody"] = hashlib.md5(text, usedforsecurity=False).hexdigest()
    elif "kinesis" in again:
        data = _again(base64.b64decode(again["kinesis"]["data"]), rng, volatile)
        if data is not None:
            again["kinesis"]["data"] = base64.b64encode(data).decode("ascii")
    elif "value" in again and "valueSchemaMetadata" not in again:
        value = _again(base64.b64decode(again["value"]), rng, volatile)
        if value is not None:
            again["value"] = base64.b64encode(value).decode("ascii")
    return again


def sns_notification_id(record: Mapping[str, Any]) -> str | None:
    """The notification's `MessageId` when `record` is an SQS record whose body is an SNS
    notification (raw message delivery off); None otherwise."""
    body = record.get("body")
    if not isinstance(body, str) or '"Notification"' not in body:
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if not isinstance(document, dict) or document.get("Type") != "Notification":
        return None
    message_id = document.get("MessageId")
    return message_id if isinstance(message_id, str) and "TopicArn" in document else None


def _again(raw: bytes, rng: random.Random, volatile: Sequence[str]) -> bytes | None:
    """The JSON object `raw` serialized again, never byte for byte the same; None when `raw`
    is no JSON object."""
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    event = _shuffled(restamped(event, volatile), rng)
    styles = list(STYLES)
    rng.shuffle(styles)
    for items, keys, indent in styles:
        text = json.dumps(event, separators=(items, keys), indent=indent, ensure_ascii=False)
        if text.encode("utf-8") != raw:
            return text.encode("utf-8")
    return json.dumps(event, indent=4).encode("utf-8")


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        names = list(value)
        rng.shuffle(names)
        return {name: _shuffled(value[name], rng) for name in names}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def restamped(event: dict[str, Any], volatile: Sequence[str]) -> dict[str, Any]:
    """`event` with each field of `volatile` (dotted paths) stamped anew: an ISO 8601 time a
    second later, a number plus one, another string with `-retry` appended; booleans and
    missing paths left alone."""
    event = copy.deepcopy(event)
    for path in volatile:
        *parents, name = path.split(".")
        holder: Any = event
        for parent in parents:
            holder = holder.get(parent) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and name in holder:
            holder[name] = _stamped(holder[name])
    return event


def _stamped(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return f"{value}-retry"
        later = (moment + timedelta(seconds=1)).isoformat()
        return later.replace("+00:00", "Z") if value.endswith("Z") else later
    return value
