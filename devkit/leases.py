"""A lease whose worker died holding it: where every leased-mode, reaper and demo scenario of a
crash starts. Claimed with the store's own writes, so the item is exactly what leased mode
leaves behind (tests of the stages never lay it out themselves)."""

from __future__ import annotations

from typing import Any

from lambda_inbox import InboundMessage, KeyStrategy
from lambda_inbox._sources.identity import identify
from lambda_inbox.store._leases import ClaimState, LeaseWrites


def crashed_claim(
    client: Any,
    *,
    table: str,
    consumer: str,
    message: InboundMessage,
    keys: KeyStrategy,
    claimed_at: float,
    lease_seconds: float = 60.0,
) -> str:
    """Claim `message` for `consumer` at `claimed_at` (epoch seconds) and never finish: the
    record is IN_PROGRESS until `claimed_at + lease_seconds`. Its key and fingerprint are the
    ones the consumer reads (`keys`). Returns the message key."""
    key, fingerprint = identity_of(message, keys)
    leases = LeaseWrites(client, table=table, consumer=consumer, lease_seconds=lease_seconds)
    claim = leases.claim(message, key, fingerprint, now=claimed_at)
    if claim.state is not ClaimState.CLAIMED:
        raise AssertionError(f"{key} was not claimed: {claim.state}")
    return key


def identity_of(message: InboundMessage, keys: KeyStrategy) -> tuple[str, str]:
    """The message key and fingerprint the consumer reads for `message`."""
    delivery = identify(message, keys)
    return delivery.key, delivery.fingerprint
