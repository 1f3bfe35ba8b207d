"""How long a leased-mode claim holds a message, and how many claims a message gets."""

from __future__ import annotations

import math
from datetime import timedelta

from lambda_inbox._errors import ConfigurationError
from lambda_inbox._internal import _Settings


class LeasePolicy(_Settings):
    """How long a claim holds a message (`duration`), how many claims a message gets before it
    is dead-lettered as `attempts_exhausted` (`max_attempts`), and whether a transient failure
    releases the lease at once (`release_on_failure`; by default it is kept until it expires).

    Keep `duration` above the side effect's worst-case time and below the source queue's
    visibility timeout, so a redelivery finds the lease expired and can take over.
    """

    __slots__ = ("duration", "max_attempts", "release_on_failure")

    def __init__(
        self,
        duration: timedelta = timedelta(seconds=60),
        max_attempts: int = 5,
        release_on_failure: bool = False,
    ) -> None:
        if duration <= timedelta(0):
            raise ConfigurationError("LeasePolicy.duration must be positive")
        if max_attempts < 1:
            raise ConfigurationError("LeasePolicy.max_attempts must be >= 1")
        self.duration = duration
        self.max_attempts = max_attempts
        self.release_on_failure = release_on_failure


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
