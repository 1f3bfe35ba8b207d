"""Settings of one inbox consumer, with defaults that are safe in production."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Literal, get_args

from lambda_inbox._errors import ConfigurationError
from lambda_inbox._internal import RetryPolicy, _Settings

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


def _require_duplicate_read(name: str, value: object) -> None:
    """`ConfigurationError` naming `name` (the argument or the variable) unless `value` is a mode
    of `duplicate_read`."""
    if value not in DUPLICATE_READS:
        raise ConfigurationError(
            f"{name} must be one of {', '.join(DUPLICATE_READS)}, not {value!r}"
        )


class Retention(_Settings):
    """What the inbox keeps, and for how long: COMPLETED records for `completed` (it must exceed
    the broker's redelivery window, SQS retention or Kafka's replay horizon: a message
    redelivered after its record expired is processed again), FAILED records (a dead-lettered
    message's incident record) for `failed` (14 days, SQS's longest retention) with the first
    `snapshot_bytes` of the payload."""

    __slots__ = ("completed", "failed", "snapshot_bytes")

    def __init__(
        self,
        completed: timedelta = RETENTION,
        failed: timedelta = FAILED_RETENTION,
        snapshot_bytes: int = 8 * 1024,
    ) -> None:
        if completed <= timedelta(0) or failed <= timedelta(0):
            raise ConfigurationError("Retention.completed and Retention.failed must be positive")
        if snapshot_bytes < 0:
            raise ConfigurationError("Retention.snapshot_bytes must be >= 0")
        self.completed = completed
        self.failed = failed
        self.snapshot_bytes = snapshot_bytes


class GroupCommit(_Settings):
    """How a batch's messages are committed together (docs/concepts.md, "Group commit").

    `max_transaction_actions`: most actions one transaction may hold (DynamoDB allows 100).
    `max_group_messages`: most messages one transaction may hold; 1 disables group commit; the
    default leaves the limit to `max_transaction_actions` (a message takes at least its inbox
    record's action, and merged commuting updates let many messages of a hot item share a
    transaction). `max_parallel_commits`: transactions of one wave that may run at the same
    time. `duplicate_read`: "auto" reads the batch's inbox keys before the commit only when
    something suggests a duplicate (docs/concepts.md, "One request per new batch"), "always" on
    every batch, "never" leaves every duplicate to the commit (leased mode always reads).
    `migrating_from`: a `PowertoolsIdempotency` during a cut-over from Powertools'
    `@idempotent_function`: each transaction checks its records, and a message it completed is
    recorded and not applied again (docs/powertools.md)."""

    __slots__ = (
        "duplicate_read",
        "max_group_messages",
        "max_parallel_commits",
        "max_transaction_actions",
        "migrating_from",
    )

    def __init__(
        self,
        max_transaction_actions: int = MAX_TRANSACTION_ACTIONS,
        max_group_messages: int = MAX_TRANSACTION_ACTIONS,
        max_parallel_commits: int = 4,
        duplicate_read: DuplicateRead = "auto",
        migrating_from: Any = None,  # a `PowertoolsIdempotency`: the settings know no Powertools
    ) -> None:
        if not 2 <= max_transaction_actions <= MAX_TRANSACTION_ACTIONS:
            raise ConfigurationError(
                f"max_transaction_actions must be between 2 and {MAX_TRANSACTION_ACTIONS}"
            )
        if max_group_messages < 1 or max_parallel_commits < 1:
            raise ConfigurationError("max_group_messages and max_parallel_commits must be >= 1")
        _require_duplicate_read("duplicate_read", duplicate_read)
        self.max_transaction_actions = max_transaction_actions
        self.max_group_messages = max_group_messages
        self.max_parallel_commits = max_parallel_commits
        self.duplicate_read: DuplicateRead = duplicate_read
        self.migrating_from = migrating_from


class SourceSettings(_Settings):
    """How the sources stage reads a batch's records and reports their failures.

    `value_formats`: how Kafka values and Kinesis data are read (`ValueFormats`; JSON by
    default). `decoding_limits`: what one record may cost to decode (`DecodingLimits`: bytes and
    values; past them it is poison `too_large`; None: the defaults, which fit a 128 MB
    function). `trusted_redrivers`: the principals (IAM unique ids, `AROA...`, `AIDA...`; a whole
    `SenderId` is cut at its `:`) whose copies of a dead letter are believed about its original
    sender (docs/security.md, "Redrive"). `fifo_failure_mode`, SQS FIFO: "stop" reports every
    record after the first failure (the AWS rule), "skip-group" only holds back later records of
    the failed message group."""

    __slots__ = ("decoding_limits", "fifo_failure_mode", "trusted_redrivers", "value_formats")

    def __init__(
        self,
        value_formats: Any = None,  # a `ValueFormats`: the settings know no source
        decoding_limits: Any = None,  # a `DecodingLimits`, loaded with the first record to check
        trusted_redrivers: Iterable[str] = (),
        fifo_failure_mode: FifoFailureMode = "stop",
    ) -> None:
        if fifo_failure_mode not in FIFO_FAILURE_MODES:
            raise ConfigurationError(
                f"fifo_failure_mode must be one of {', '.join(FIFO_FAILURE_MODES)}, "
                f"not {fifo_failure_mode!r}"
            )
        self.value_formats = value_formats
        self.decoding_limits = decoding_limits
        self.trusted_redrivers = tuple(trusted_redrivers)
        self.fifo_failure_mode: FifoFailureMode = fifo_failure_mode


_DEFAULT_RETENTION = Retention()
_DEFAULT_COMMIT = GroupCommit()
_DEFAULT_SOURCES = SourceSettings()


class InboxConfig(_Settings):
    """Where the inbox lives and how a consumer behaves.

    `consumer`: the consumer's name (the inbox keys' prefix, the metrics' `consumer` dimension);
    `inbox_table`: the inbox table's name (`INBOX_TABLE`); `dead_letter_queue_url`: where poison
    goes (`DEAD_LETTER_QUEUE_URL`; None reports poison as a failure); `retention`: what the
    inbox keeps and how long (`Retention`); `retry`: the `RetryPolicy` of transient failures;
    `commit`: how messages are committed together (`GroupCommit`); `sources`: how records are
    read (`SourceSettings`); `key_attributes`: the key attributes of the tables the handler
    writes, so a `put` knows its item (default `pk`, `sk`); `clock`: the wall clock (epoch
    seconds) of record times and lease expiries; simulations and tests pass their own.
    """

    __slots__ = (
        "clock",
        "commit",
        "consumer",
        "dead_letter_queue_url",
        "inbox_table",
        "key_attributes",
        "retention",
        "retry",
        "sources",
    )

    def __init__(
        self,
        consumer: str,
        inbox_table: str,
        dead_letter_queue_url: str | None = None,
        retention: Retention = _DEFAULT_RETENTION,
        retry: RetryPolicy | None = None,
        commit: GroupCommit = _DEFAULT_COMMIT,
        sources: SourceSettings = _DEFAULT_SOURCES,
        key_attributes: tuple[str, ...] = DEFAULT_KEY_ATTRIBUTES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not consumer or "#" in consumer:
            raise ConfigurationError("consumer must be a non-empty name without '#'")
        if not inbox_table:
            raise ConfigurationError("inbox_table is required (set INBOX_TABLE)")
        for name, group, kind in (
            ("retention", retention, Retention),
            ("commit", commit, GroupCommit),
            ("sources", sources, SourceSettings),
        ):
            if not isinstance(group, kind):
                raise ConfigurationError(
                    f"{name} must be a {kind.__name__}, not {type(group).__name__}"
                )
        self.consumer = consumer
        self.inbox_table = inbox_table
        self.dead_letter_queue_url = dead_letter_queue_url
        self.retention = retention
        self.retry = retry if retry is not None else RetryPolicy()
        self.commit = commit
        self.sources = sources
        self.key_attributes = key_attributes
        self.clock = clock

    @classmethod
    def from_env(cls, consumer: str, **overrides: object) -> InboxConfig:
        """Build a config from `INBOX_TABLE`, `DEAD_LETTER_QUEUE_URL`, `INBOX_RETENTION_DAYS`
        and `INBOX_FAILED_RETENTION_DAYS` (`Retention`), `INBOX_MAX_PARALLEL_COMMITS`
        (transactions of one batch sent side by side, default 4) and `INBOX_DUPLICATE_READ`
        (`auto`, `always` or `never`) (`GroupCommit`), and `INBOX_TRUSTED_REDRIVERS`
        (principals, comma-separated; `SourceSettings`). `overrides` are `InboxConfig`'s
        parameters; a variable sets what a group given there leaves at its default."""
        table = os.environ.get("INBOX_TABLE", "")
        if not table and "inbox_table" not in overrides:
            raise ConfigurationError("INBOX_TABLE is not set: the inbox needs its DynamoDB table")
        retention: dict[str, object] = {}
        for name, setting in (
            ("INBOX_RETENTION_DAYS", "completed"),
            ("INBOX_FAILED_RETENTION_DAYS", "failed"),
        ):
            days = os.environ.get(name)
            if days:
                try:
                    retention[setting] = timedelta(days=float(days))
                except ValueError:
                    raise ConfigurationError(
                        f"{name} must be a number of days, not {days!r}"
                    ) from None
        commit: dict[str, object] = {}
        parallel = os.environ.get("INBOX_MAX_PARALLEL_COMMITS")
        if parallel:
            if not parallel.isdigit():
                raise ConfigurationError(
                    f"INBOX_MAX_PARALLEL_COMMITS must be a whole number, not {parallel!r}"
                )
            commit["max_parallel_commits"] = int(parallel)
        read = os.environ.get("INBOX_DUPLICATE_READ")
        if read:
            _require_duplicate_read("INBOX_DUPLICATE_READ", read)
            commit["duplicate_read"] = read
        sources: dict[str, object] = {}
        redrivers = os.environ.get("INBOX_TRUSTED_REDRIVERS")
        if redrivers:
            sources["trusted_redrivers"] = redrivers.split(",")
        values: dict[str, object] = {
            "inbox_table": table,
            "dead_letter_queue_url": os.environ.get("DEAD_LETTER_QUEUE_URL") or None,
            **overrides,
        }
        for name, default, variables in (
            ("retention", _DEFAULT_RETENTION, retention),
            ("commit", _DEFAULT_COMMIT, commit),
            ("sources", _DEFAULT_SOURCES, sources),
        ):
            given = values.get(name, default)
            if isinstance(given, _Settings) and variables:
                unset = {
                    field: value
                    for field, value in variables.items()
                    if getattr(given, field) == getattr(default, field)
                }
                values[name] = given.replace(**unset)
        return cls(consumer=consumer, **values)  # type: ignore[arg-type]
