"""What belongs to no stage: the settings' one base and the retry policy every stage shares, and
the services' limits the library and its tools keep to, each written once (from each service's
quotas page; docs/aws-fidelity.md). The lowest floor of the library (errors only below); its
modules: the AWS clients (`aws_clients`), the invocation's deadline (`deadline`), a missing
table's name and variable (`table_names`)."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any, Self

from lambda_inbox._errors import ConfigurationError

#: SQS: the largest message (body plus attribute names, data types and values), which is also
#: the most one `SendMessageBatch` carries in all, in bytes.
SQS_MAX_MESSAGE_BYTES = 256 * 1024
#: SQS: message attributes one message carries.
SQS_MAX_ATTRIBUTES = 10
#: Entries of one SQS `SendMessageBatch`, SNS `PublishBatch` or EventBridge `PutEvents` call.
MAX_BATCH_ENTRIES = 10
#: SNS: the largest message, in bytes.
SNS_MAX_MESSAGE_BYTES = 256 * 1024
#: EventBridge: the largest event entry, in bytes.
EVENTBRIDGE_MAX_ENTRY_BYTES = 256 * 1024


class _Settings:
    """The one style of every settings class: set once in `__init__` (frozen after), equal and
    hashed by value over `__slots__`, a repr, and `replace`, as a frozen dataclass would give
    them. Not a dataclass: settings are made at import, and each dataclass definition costs
    about 3 M instructions of cold start (docs/PERFORMANCE.md, "Value types in one style")."""

    __slots__: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, name):
            raise AttributeError(f"{type(self).__name__} is frozen: make a copy with replace()")
        object.__setattr__(self, name, value)

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` applied, checked like a new one (as `dataclasses.replace`)."""
        current = {name: getattr(self, name) for name in self.__slots__}
        return type(self)(**(current | changes))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._values() == self._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class RetryPolicy(_Settings):
    """Bounded, jittered exponential backoff for transient failures inside one invocation.

    A message is retried at most `max_attempts` times, waiting a random time up to
    `base_delay` doubled each round and capped at `max_delay` (seconds), and never past the
    Lambda deadline minus
    a margin: what is left is reported as a batch item failure so the source redelivers. The
    margin is `deadline_margin_fraction` of the time left at the start of the invocation, at
    most `deadline_margin` (3 s of a 30 s function; 0.6 s of a 3 s one).
    """

    __slots__ = (
        "base_delay",
        "deadline_margin",
        "deadline_margin_fraction",
        "max_attempts",
        "max_delay",
    )

    def __init__(
        self,
        max_attempts: int = 6,
        base_delay: float = 0.025,
        max_delay: float = 1.0,
        deadline_margin: timedelta = timedelta(seconds=3),
        deadline_margin_fraction: float = 0.2,
    ) -> None:
        if max_attempts < 1:
            raise ConfigurationError("RetryPolicy.max_attempts must be >= 1")
        if base_delay <= 0 or max_delay < base_delay:
            raise ConfigurationError("RetryPolicy needs 0 < base_delay <= max_delay")
        if not 0 <= deadline_margin_fraction < 1:
            raise ConfigurationError("RetryPolicy.deadline_margin_fraction must be in [0, 1)")
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.deadline_margin = deadline_margin
        self.deadline_margin_fraction = deadline_margin_fraction

    def margin_for(self, budget_seconds: float) -> float:
        """Seconds kept back from a budget for answering Lambda in time."""
        return min(
            self.deadline_margin.total_seconds(), budget_seconds * self.deadline_margin_fraction
        )

    def backoff(self, round_number: int) -> float:
        """Full-jitter exponential delay before retry round `round_number` (1, 2, ...)."""
        # Backoff jitter, not a secret: the standard generator is right here.
        cap = min(self.max_delay, self.base_delay * 2**round_number)
        return random.uniform(0, cap)  # nosec B311
