"""The created item of a `CreatesItem` consumer: the item is its own inbox record.

Besides the user's attributes, the item carries the message's consumer, key, fingerprint and
outcome; its conditional put is both the effect and the dedupe. The put's condition is that no
item of that key exists, and a failed put returns the stored item (`ALL_OLD`, at no read cost),
read back here: made by this consumer (a duplicate, or a conflict when its fingerprint differs),
or not (the application's own item, or another consumer's).

Dedupe lasts as long as the item exists: there is no TTL attribute, and deleting the item opens
its key again (docs/concepts.md, "The item is the record").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambda_inbox.store._record import InboxRecord, Status

CONSUMER_ATTRIBUTE = "inbox_consumer"
MESSAGE_KEY_ATTRIBUTE = "inbox_message_key"
FINGERPRINT_ATTRIBUTE = "inbox_fingerprint"
OUTCOME_ATTRIBUTE = "inbox_outcome"
#: The attributes the library adds; an item that names one itself is refused.
RESERVED_ATTRIBUTES = frozenset(
    {CONSUMER_ATTRIBUTE, MESSAGE_KEY_ATTRIBUTE, FINGERPRINT_ATTRIBUTE, OUTCOME_ATTRIBUTE}
)
COMMITTED = "committed"
#: What a failed put returns: the stored item, so a duplicate is told from a conflict.
RETURN_STORED_ITEM = {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"}


def created_attributes(consumer: str, message_key: str, fingerprint: str) -> dict[str, str]:
    """What the item carries besides the user's attributes (plain values)."""
    attributes = {
        CONSUMER_ATTRIBUTE: consumer,
        MESSAGE_KEY_ATTRIBUTE: message_key,
        OUTCOME_ATTRIBUTE: COMMITTED,
    }
    if fingerprint:
        attributes[FINGERPRINT_ATTRIBUTE] = fingerprint
    return attributes


def created_condition(key_attribute: str) -> tuple[str, dict[str, str]]:
    """The put's condition and its names: no item of this key exists yet."""
    return "attribute_not_exists(#created_key)", {"#created_key": key_attribute}


def reserved_in(item: Mapping[str, Any]) -> list[str]:
    """The library's attribute names the user's item sets itself (it may not)."""
    return sorted(RESERVED_ATTRIBUTES.intersection(item))


def created_record(stored: Mapping[str, Any]) -> InboxRecord | None:
    """The stored item (plain values) read as the COMPLETED record of the message that created
    it; None for an item no `CreatesItem` consumer made."""
    consumer = stored.get(CONSUMER_ATTRIBUTE)
    message_key = stored.get(MESSAGE_KEY_ATTRIBUTE)
    if not isinstance(consumer, str) or not isinstance(message_key, str):
        return None
    fingerprint = stored.get(FINGERPRINT_ATTRIBUTE)
    return InboxRecord(
        consumer=consumer,
        message_key=message_key,
        status=Status.COMPLETED,
        fingerprint=fingerprint if isinstance(fingerprint, str) else None,
        result=str(stored.get(OUTCOME_ATTRIBUTE, COMMITTED)),
    )
