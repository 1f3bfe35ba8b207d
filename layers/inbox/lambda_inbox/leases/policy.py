"""How long a leased-mode claim holds a message, and how many claims a message gets."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from lambda_inbox.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class LeasePolicy:
    """How long a claim holds a message, and how many claims a message gets.

    Keep `duration` above the side effect's worst-case time and below the source queue's
    visibility timeout, so a redelivery finds the lease expired and can take over.
    """

    duration: timedelta = timedelta(seconds=60)
    max_attempts: int = 5
    """Claims a message gets before it is dead-lettered as `attempts_exhausted`."""
    release_on_failure: bool = False
    """Release the lease at once after a transient failure (default: keep it until it expires)."""

    def __post_init__(self) -> None:
        if self.duration <= timedelta(0):
            raise ConfigurationError("LeasePolicy.duration must be positive")
        if self.max_attempts < 1:
            raise ConfigurationError("LeasePolicy.max_attempts must be >= 1")


def lease_policy(lease: LeasePolicy | timedelta | float | None) -> LeasePolicy:
    """A `LeasePolicy` from what `InboxConsumer(lease=...)` accepts."""
    if lease is None:
        return LeasePolicy()
    if isinstance(lease, LeasePolicy):
        return lease
    if isinstance(lease, timedelta):
        return LeasePolicy(duration=lease)
    if isinstance(lease, (int, float)) and math.isfinite(lease):
        return LeasePolicy(duration=timedelta(seconds=lease))
    raise ConfigurationError(f"lease must be a LeasePolicy, a timedelta or seconds, not {lease!r}")
