"""The outbox item: a request for an effect elsewhere, committed with the inbox.

A consumer that must cause an effect outside its own tables (a message for another service, an
email to send) does not call out from `decide`. It adds an **outbox item** to its unit of work
(`UnitOfWork.outbox`): the item commits in the same transaction as the inbox record and the
domain writes, so the request exists exactly when the message's effects do. A relay
(`OutboxRelay`), triggered by the table's DynamoDB stream, sends each new item to its
destination afterwards, at least once; the receiver's own inbox makes that effectively once,
keyed on the message id fixed here, at write time, and identical on every retry of the relay.

An outbox item is an ordinary item of any table with a stream (`NEW_IMAGE` or
`NEW_AND_OLD_IMAGES`): key `OUTBOX#{message_id}` in the first key attribute (and the same in the
second, when the table has one), the message in `outbox_*` attributes, and a TTL attribute so
that relayed items expire (docs/concepts.md, "The outbox"). It is written only if its key is new
(`outbox_put`), read back from a stream image (`outbox_message_of`) or, when the stream no
longer holds it, from the table (`outbox_messages_written`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Required, TypedDict

from lambda_inbox._errors import UnitOfWorkError
from lambda_inbox.store._attribute_values import deserialize_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "DEFAULT_DETAIL_TYPE",
    "DEFAULT_EVENT_SOURCE",
    "DEFAULT_OUTBOX_TTL_SECONDS",
    "OUTBOX_PREFIX",
    "OutboxMessage",
    "OutboxRequest",
    "outbox_message_of",
    "outbox_messages_written",
    "outbox_put",
]

OUTBOX_PREFIX = "OUTBOX#"
#: Relayed items expire after this long (a stream keeps records for 24 hours; the rest is room
#: to look at what was sent).
DEFAULT_OUTBOX_TTL_SECONDS = 7 * 24 * 3600
DESTINATION = "outbox_destination"
BODY = "outbox_body"
ATTRIBUTES = "outbox_attributes"
MESSAGE_ID = "outbox_message_id"
GROUP_ID = "outbox_group_id"
CREATED_AT = "outbox_created_at"
EVENT_SOURCE = "outbox_event_source"
DETAIL_TYPE = "outbox_detail_type"
#: An EventBridge event's `Source` and `DetailType` when the item names none.
DEFAULT_EVENT_SOURCE = "lambda-inbox.outbox"
DEFAULT_DETAIL_TYPE = "OutboxMessage"
#: SQS delivers at most 10 message attributes, and the relay adds `outbox-message-id`.
MAX_ATTRIBUTES = 9
#: The outbox item's condition: its key is new.
_NEW_ITEM = "attribute_not_exists(#outbox_key)"
#: A mapping body as compact JSON.
_compact_json = json.JSONEncoder(separators=(",", ":")).encode


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """What the relay sends: `body` to `destination` (an SQS queue URL, an SNS topic ARN, an
    EventBridge bus ARN, or a name the relay maps to one of these), with `attributes` (String
    message attributes of SQS and SNS) and `message_id` (the receiver's idempotency key)."""

    message_id: str
    destination: str
    body: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    group_id: str | None = None
    """FIFO queues and topics: the message group (the message id when not given)."""
    created_at: float = 0.0
    """When the item was written, epoch seconds."""
    event_source: str = DEFAULT_EVENT_SOURCE
    """EventBridge: the event's `Source`."""
    detail_type: str = DEFAULT_DETAIL_TYPE
    """EventBridge: the event's `DetailType`."""

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> OutboxMessage | None:
        """The message an item (plain Python values) holds; None for an item that is no outbox
        item. An outbox item missing its destination or body raises ValueError."""
        if MESSAGE_ID not in item:
            return None
        if not isinstance(item.get(DESTINATION), str) or not isinstance(item.get(BODY), str):
            raise ValueError(f"outbox item {item[MESSAGE_ID]!r} has no destination or body")
        attributes = item.get(ATTRIBUTES) or {}
        return cls(
            message_id=str(item[MESSAGE_ID]),
            destination=item[DESTINATION],
            body=item[BODY],
            attributes={str(k): str(v) for k, v in attributes.items()},
            group_id=str(item[GROUP_ID]) if item.get(GROUP_ID) else None,
            created_at=float(item.get(CREATED_AT) or 0),
            event_source=str(item.get(EVENT_SOURCE) or DEFAULT_EVENT_SOURCE),
            detail_type=str(item.get(DETAIL_TYPE) or DEFAULT_DETAIL_TYPE),
        )


class OutboxRequest(TypedDict, total=False):
    """What `UnitOfWork.outbox` asks to send: `destination` and `body` are required."""

    destination: Required[str]
    #: Text, or a mapping sent as compact JSON.
    body: Required[str | Mapping[str, Any]]
    #: What the receiver dedupes on; a new UUID unless given.
    message_id: str | None
    #: SQS or SNS message attributes (strings), at most 9; EventBridge events carry none.
    attributes: Mapping[str, str] | None
    #: The message group on a FIFO queue or topic.
    group_id: str | None
    #: EventBridge: the event's `Source` ("lambda-inbox.outbox") and `DetailType`
    #: ("OutboxMessage"); naming either asks for a JSON object body and no attributes.
    event_source: str | None
    detail_type: str | None
    #: The table's TTL attribute ("expires_at") and how long the item is kept (7 days).
    ttl_attribute: str
    ttl_seconds: int | None


def outbox_put(
    key_attributes: tuple[str, ...],
    *,
    now: float | None = None,
    destination: str,
    body: str | Mapping[str, Any],
    message_id: str | None = None,
    attributes: Mapping[str, str] | None = None,
    group_id: str | None = None,
    event_source: str | None = None,
    detail_type: str | None = None,
    ttl_attribute: str = "expires_at",
    ttl_seconds: int | None = None,
) -> tuple[str, dict[str, Any], str, dict[str, str]]:
    """The message id, the item (plain Python values), the condition and its names of the `Put`
    of one outbox request (its fields: `OutboxRequest`), written at `now` (the current time
    unless given): the one statement of an outbox item's layout, which
    `OutboxMessage.from_item` reads back. The item must be new: a message id is fresh, or the
    same decision was made before."""
    if not destination:
        raise UnitOfWorkError("outbox: the destination is empty")
    if isinstance(body, str):
        text = body
    else:
        try:
            text = _compact_json(body)
        except (TypeError, ValueError, RecursionError) as error:
            raise UnitOfWorkError(f"outbox: the body is not JSON-serializable: {error}") from None
    if not text:
        raise UnitOfWorkError("outbox: the body is empty (SQS refuses an empty message)")
    for name, value in attributes.items() if attributes else ():
        if not isinstance(name, str) or not isinstance(value, str) or not name or not value:
            raise UnitOfWorkError(f"outbox: attribute {name!r} must be a non-empty string")
    if attributes and len(attributes) > MAX_ATTRIBUTES:
        raise UnitOfWorkError(
            f"outbox: {len(attributes)} attributes; at most {MAX_ATTRIBUTES} (SQS delivers 10, "
            "and the relay adds outbox-message-id)"
        )
    if event_source is not None or detail_type is not None:
        _check_event(text, attributes, event_source, detail_type)
    if message_id is None:
        import uuid  # only here: `uuid` loads `platform`, a cold-start cost

        message_id = str(uuid.uuid4())
    created = int(time.time() if now is None else now)
    item: dict[str, Any] = dict.fromkeys(key_attributes[:2], f"{OUTBOX_PREFIX}{message_id}")
    item[MESSAGE_ID] = message_id
    item[DESTINATION] = destination
    item[BODY] = text
    item[CREATED_AT] = created
    item[ttl_attribute] = created + (
        DEFAULT_OUTBOX_TTL_SECONDS if ttl_seconds is None else ttl_seconds
    )
    if attributes:
        item[ATTRIBUTES] = dict(attributes)
    if group_id:
        item[GROUP_ID] = group_id
    if event_source:
        item[EVENT_SOURCE] = event_source
    if detail_type:
        item[DETAIL_TYPE] = detail_type
    return message_id, item, _NEW_ITEM, {"#outbox_key": key_attributes[0]}


def _check_event(
    text: str,
    attributes: Mapping[str, str] | None,
    event_source: str | None,
    detail_type: str | None,
) -> None:
    """An item for an EventBridge bus: what PutEvents would refuse, refused now."""
    for name, value in (("event_source", event_source), ("detail_type", detail_type)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise UnitOfWorkError(f"outbox: {name} must be a non-empty string")
    if event_source is not None and event_source.startswith("aws."):
        raise UnitOfWorkError("outbox: event_source may not begin with 'aws.' (AWS's own)")
    if detail_type is not None and len(detail_type) > 128:
        raise UnitOfWorkError("outbox: detail_type is at most 128 characters")
    problem = eventbridge_problem(attributes, text)
    if problem is not None:
        raise UnitOfWorkError(f"outbox: {problem}")


def eventbridge_problem(attributes: Mapping[str, str] | None, body: str) -> str | None:
    """Why an EventBridge bus would refuse a message with `attributes` and `body` (None: it
    would not), checked when the item is written and again when it is sent."""
    if attributes:
        return "an EventBridge event carries no message attributes; put them in the body"
    if not is_json_object(body):
        return "an EventBridge event's detail must be a JSON object"
    return None


def is_json_object(text: str) -> bool:
    """`text` is a JSON object (what an EventBridge event's `Detail` must be)."""
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def outbox_message_of(image: Mapping[str, Any]) -> OutboxMessage | None:
    """The message a stream image (DynamoDB JSON) holds; None for an item that is no outbox
    item. An outbox item missing its destination or body raises ValueError."""
    return OutboxMessage.from_item(deserialize_item(image))


def outbox_messages_written(
    client: DynamoDBClient, table: str, *, since: float, until: float
) -> Iterator[OutboxMessage]:
    """The outbox items of `table` written between `since` and `until` (epoch seconds), by a
    strongly consistent scan: for a stream that no longer holds them, never on a hot path."""
    pages = client.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression="attribute_exists(#id) AND #at BETWEEN :from AND :to",
        ExpressionAttributeNames={"#id": MESSAGE_ID, "#at": CREATED_AT},
        ExpressionAttributeValues={
            ":from": {"N": str(since)},
            ":to": {"N": str(until)},
        },
        ConsistentRead=True,
    )
    for page in pages:
        for item in page.get("Items", []):
            message = outbox_message_of(item)
            if message is not None:
                yield message
