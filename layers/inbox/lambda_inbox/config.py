"""Settings of one inbox consumer, with defaults that are safe in production."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Literal, Self, get_args

from lambda_inbox.errors import ConfigurationError

FifoFailureMode = Literal["stop", "skip-group"]
FIFO_FAILURE_MODES: tuple[FifoFailureMode, ...] = get_args(FifoFailureMode)
DuplicateRead = Literal["auto", "always", "never"]
DUPLICATE_READS: tuple[DuplicateRead, ...] = get_args(DuplicateRead)

#: DynamoDB's own limits for one TransactWriteItems call.
MAX_TRANSACTION_ACTIONS = 100
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
MAX_ITEM_BYTES = 400 * 1024
#: The key attributes of the tables a handler writes, unless the settings say otherwise.
DEFAULT_KEY_ATTRIBUTES = ("pk", "sk")
#: How long COMPLETED records are kept unless the settings say otherwise: it must exceed the
#: broker's redelivery window (`InboxConfig`).
RETENTION = timedelta(days=7)
#: How long FAILED records are kept: SQS's longest retention, so a dead letter never outlives
#: the record of why it is one.
FAILED_RETENTION = timedelta(days=14)


class _Settings:
    """Equality, hashing and a repr over `__slots__`, as a frozen dataclass would give them:
    settings are made at import, and each dataclass costs ~3 M instructions to define."""

    __slots__: tuple[str, ...] = ()

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


class InboxConfig(_Settings):
    """Where the inbox lives and how a consumer behaves.

    `consumer`: the consumer's name (the inbox keys' prefix, the metrics' `consumer` dimension);
    `inbox_table`: the inbox table's name (`INBOX_TABLE`); `dead_letter_queue_url`: where poison
    goes (`DEAD_LETTER_QUEUE_URL`; None reports poison as a failure); `retry`: the `RetryPolicy`
    of transient failures.

    `retention` must exceed the broker's redelivery window (SQS retention, Kafka replay horizon):
    a message redelivered after its record expired is processed again. `failed_retention`: how
    long a FAILED record (a dead-lettered message's incident record) is kept before TTL removes
    it; 14 days, SQS's longest retention, by default.

    `max_transaction_actions`: most actions one group-commit transaction may hold (DynamoDB
    allows 100). `max_group_messages`: most messages one transaction may hold; 1 disables group
    commit; the default leaves the limit to `max_transaction_actions` (a message takes at least
    its inbox record's action, and merged commuting updates let many messages of a hot item
    share a transaction). `max_parallel_commits`: transactions of one wave that may run at the
    same time. `fifo_failure_mode`, SQS FIFO: "stop" reports every record after the first
    failure (the AWS rule), "skip-group" only holds back later records of the failed message
    group. `failed_payload_snapshot_bytes`: bytes of the payload kept on FAILED inbox records,
    for the incident review. `duplicate_read`: "auto" reads the batch's inbox keys before the
    commit only when something suggests a duplicate (docs/concepts.md, "One request per new
    batch"), "always" on every batch, "never" leaves every duplicate to the commit (leased mode
    always reads). `key_attributes`: the key attributes of the tables the handler writes, so a
    `put` knows its item (default `pk`, `sk`). `value_formats`: how Kafka values and Kinesis data
    are read (`ValueFormats`; JSON by default). `decoding_limits`: what one record may cost to
    decode (`DecodingLimits`: bytes and values; past them it is poison `too_large`; None: the
    defaults, which fit a 128 MB function). `trusted_redrivers`: the principals (IAM unique
    ids, `AROA...`, `AIDA...`; a whole `SenderId` is cut at its `:`) whose copies of a dead letter
    are believed about its original sender (docs/security.md, "Redrive"). `clock`: the wall
    clock (epoch seconds) of record times and lease expiries; simulations and tests pass their
    own.
    """

    __slots__ = (
        "clock",
        "consumer",
        "dead_letter_queue_url",
        "decoding_limits",
        "duplicate_read",
        "failed_payload_snapshot_bytes",
        "failed_retention",
        "fifo_failure_mode",
        "inbox_table",
        "key_attributes",
        "max_group_messages",
        "max_parallel_commits",
        "max_transaction_actions",
        "retention",
        "retry",
        "trusted_redrivers",
        "value_formats",
    )

    def __init__(
        self,
        consumer: str,
        inbox_table: str,
        dead_letter_queue_url: str | None = None,
        retention: timedelta = RETENTION,
        retry: RetryPolicy | None = None,
        max_transaction_actions: int = MAX_TRANSACTION_ACTIONS,
        max_group_messages: int = MAX_TRANSACTION_ACTIONS,
        max_parallel_commits: int = 4,
        fifo_failure_mode: FifoFailureMode = "stop",
        failed_payload_snapshot_bytes: int = 8 * 1024,
        duplicate_read: DuplicateRead = "auto",
        key_attributes: tuple[str, ...] = DEFAULT_KEY_ATTRIBUTES,
        value_formats: Any = None,  # a `ValueFormats`: the settings know no source
        clock: Callable[[], float] = time.time,
        trusted_redrivers: Iterable[str] = (),
        failed_retention: timedelta = FAILED_RETENTION,
        decoding_limits: Any = None,  # a `DecodingLimits`, loaded with the first record to check
    ) -> None:
        if not consumer or "#" in consumer:
            raise ConfigurationError("consumer must be a non-empty name without '#'")
        if not inbox_table:
            raise ConfigurationError("inbox_table is required (set INBOX_TABLE)")
        if retention <= timedelta(0) or failed_retention <= timedelta(0):
            raise ConfigurationError("retention and failed_retention must be positive")
        if not 2 <= max_transaction_actions <= MAX_TRANSACTION_ACTIONS:
            raise ConfigurationError(
                f"max_transaction_actions must be between 2 and {MAX_TRANSACTION_ACTIONS}"
            )
        if max_group_messages < 1 or max_parallel_commits < 1:
            raise ConfigurationError("max_group_messages and max_parallel_commits must be >= 1")
        if fifo_failure_mode not in FIFO_FAILURE_MODES:
            raise ConfigurationError(
                f"fifo_failure_mode must be one of {', '.join(FIFO_FAILURE_MODES)}, "
                f"not {fifo_failure_mode!r}"
            )
        _require_duplicate_read("duplicate_read", duplicate_read)
        self.consumer = consumer
        self.inbox_table = inbox_table
        self.dead_letter_queue_url = dead_letter_queue_url
        self.retention = retention
        self.retry = retry if retry is not None else RetryPolicy()
        self.max_transaction_actions = max_transaction_actions
        self.max_group_messages = max_group_messages
        self.max_parallel_commits = max_parallel_commits
        self.fifo_failure_mode: FifoFailureMode = fifo_failure_mode
        self.failed_payload_snapshot_bytes = failed_payload_snapshot_bytes
        self.duplicate_read: DuplicateRead = duplicate_read
        self.key_attributes = key_attributes
        self.value_formats = value_formats
        self.clock = clock
        self.trusted_redrivers = tuple(trusted_redrivers)
        self.failed_retention = failed_retention
        self.decoding_limits = decoding_limits

    @classmethod
    def from_env(cls, consumer: str, **overrides: object) -> InboxConfig:
        """Build a config from `INBOX_TABLE`, `DEAD_LETTER_QUEUE_URL`, `INBOX_RETENTION_DAYS`,
        `INBOX_FAILED_RETENTION_DAYS`, `INBOX_MAX_PARALLEL_COMMITS` (transactions of one batch
        sent side by side, default 4), `INBOX_DUPLICATE_READ` (`auto`, `always` or `never`) and
        `INBOX_TRUSTED_REDRIVERS` (principals, comma-separated)."""
        table = os.environ.get("INBOX_TABLE", "")
        if not table and "inbox_table" not in overrides:
            raise ConfigurationError("INBOX_TABLE is not set: the inbox needs its DynamoDB table")
        values: dict[str, object] = {
            "inbox_table": table,
            "dead_letter_queue_url": os.environ.get("DEAD_LETTER_QUEUE_URL") or None,
        }
        for name, setting in (
            ("INBOX_RETENTION_DAYS", "retention"),
            ("INBOX_FAILED_RETENTION_DAYS", "failed_retention"),
        ):
            days = os.environ.get(name)
            if days:
                try:
                    values[setting] = timedelta(days=float(days))
                except ValueError:
                    raise ConfigurationError(
                        f"{name} must be a number of days, not {days!r}"
                    ) from None
        parallel = os.environ.get("INBOX_MAX_PARALLEL_COMMITS")
        if parallel:
            if not parallel.isdigit():
                raise ConfigurationError(
                    f"INBOX_MAX_PARALLEL_COMMITS must be a whole number, not {parallel!r}"
                )
            values["max_parallel_commits"] = int(parallel)
        read = os.environ.get("INBOX_DUPLICATE_READ")
        if read:
            _require_duplicate_read("INBOX_DUPLICATE_READ", read)
            values["duplicate_read"] = read
        redrivers = os.environ.get("INBOX_TRUSTED_REDRIVERS")
        if redrivers:
            values["trusted_redrivers"] = redrivers.split(",")
        values.update(overrides)
        return cls(consumer=consumer, **values)  # type: ignore[arg-type]


def _require_duplicate_read(name: str, value: object) -> None:
    """`ConfigurationError` naming `name` (the argument or the variable) unless `value` is a mode
    of `duplicate_read`."""
    if value not in DUPLICATE_READS:
        raise ConfigurationError(
            f"{name} must be one of {', '.join(DUPLICATE_READS)}, not {value!r}"
        )
