"""The processing model for one batch, whatever the source.

identify -> skip known duplicates (one BatchGetItem) -> decide (unit of work) -> group commit ->
classify each message from `CancellationReasons` -> dead-letter poison -> report.

Ordering: a message may belong to an ordering scope (Kafka partition, FIFO queue or group).
Once a message of a scope fails, every later message of that scope that has not committed is
skipped and reported, so the source redelivers them in order. Messages sharing an item commit
in delivery order (see `planner`); messages on distinct items commute, so they may share a
transaction with an earlier message of their scope.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .commit import (
    REJECTED_REASONS,
    TRANSIENT_REASONS,
    CancellationReason,
    CommitAttempt,
    CommitStatus,
    PreparedTransaction,
    execute,
)
from .config import InboxConfig
from .dead_letter import MESSAGE_KEY_ATTRIBUTE, DeadLetterQueue
from .errors import PoisonMessage, UnitOfWorkError
from .identity import KeyStrategy, MissingMessageKey, fingerprint
from .messages import InboundMessage, UndecodableBody
from .observability import Telemetry
from .outcomes import MessageResult, Outcome
from .planner import chunk_wave, plan_waves
from .store import InboxStore, Status
from .unit_of_work import ConditionFailures, FailedCondition, UnitOfWork, deserialize_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

M = TypeVar("M")
Parse = Callable[[Any], M]
Decide = Callable[[M, UnitOfWork], object]
OnConditionFailed = Callable[[M, ConditionFailures, UnitOfWork], object]
RemainingMillis = Callable[[], int]

DEADLINE_DETAIL = "no time left before the Lambda deadline; reported for redelivery"
#: How many times a handler may answer failed conditions with other writes for one message.
MAX_DECISION_ROUNDS = 4


@dataclass
class _Work(Generic[M]):
    """One message on its way through the batch."""

    message: InboundMessage
    key: str
    fingerprint: str
    payload: M
    uow: UnitOfWork
    rounds: int = 0
    attempts: int = 0
    items: frozenset[str] = field(default=frozenset())

    @property
    def action_count(self) -> int:
        return 1 + len(self.uow.actions)

    @property
    def size(self) -> int:
        return 1024 + sum(action.size for action in self.uow.actions)


@dataclass
class _Chunk(Generic[M]):
    works: list[_Work[M]]
    prepared: PreparedTransaction
    #: For each transact item: (index of its work, index of the domain action or -1 for inbox).
    owners: list[tuple[int, int]]


class BatchEngine(Generic[M]):
    """Runs the processing model for one consumer.

    Batches may run concurrently in one process (the clients are thread-safe), but Powertools
    metrics are process-wide: concurrent batches in one process share one metric set.
    """

    def __init__(
        self,
        *,
        config: InboxConfig,
        dynamodb: DynamoDBClient,
        store: InboxStore,
        dead_letters: DeadLetterQueue | None,
        keys: KeyStrategy,
        parse: Parse[M],
        decide: Decide[M],
        on_condition_failed: OnConditionFailed[M] | None,
        telemetry: Telemetry,
        key_attributes: tuple[str, ...],
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._config = config
        self._dynamodb = dynamodb
        self._store = store
        self._dead_letters = dead_letters
        self._keys = keys
        self._parse = parse
        self._decide = decide
        self._on_condition_failed = on_condition_failed
        self._telemetry = telemetry
        self._key_attributes = key_attributes
        self._clock = clock
        self._sleep = sleep

    def process(
        self, messages: Sequence[InboundMessage], remaining_millis: RemainingMillis | None = None
    ) -> list[MessageResult]:
        run = _BatchRun(self, messages, remaining_millis)
        results = run.execute()
        self._telemetry.batch_done(results, run.attempts)
        return results


class _BatchRun(Generic[M]):
    """The state of one batch: results so far, failed ordering scopes, commit attempts, the
    deadline."""

    def __init__(
        self,
        engine: BatchEngine[M],
        messages: Sequence[InboundMessage],
        remaining_millis: RemainingMillis | None,
    ) -> None:
        self.e = engine
        self.config = engine._config
        self.messages = sorted(messages, key=lambda message: message.sequence)
        self.results: dict[int, MessageResult] = {}
        self.failed_scopes: dict[str, int] = {}
        self.attempts: list[CommitAttempt] = []
        started = time.monotonic()
        budget = remaining_millis() / 1000 if remaining_millis else None
        margin = self.config.retry.deadline_margin.total_seconds()
        self.deadline = started + budget - margin if budget is not None else None
        self.log = engine._telemetry.logger

    # ---- bookkeeping -------------------------------------------------------------------

    def finish(
        self,
        work_or_message: _Work[M] | InboundMessage,
        outcome: Outcome,
        key: str | None = None,
        code: str | None = None,
        detail: str = "",
    ) -> None:
        message = work_or_message.message if isinstance(work_or_message, _Work) else work_or_message
        if isinstance(work_or_message, _Work):
            key = key or work_or_message.key
        self.results[message.sequence] = MessageResult(message, outcome, key, code, detail)
        if outcome.needs_redelivery and message.ordering_scope is not None:
            previous = self.failed_scopes.get(message.ordering_scope, message.sequence)
            self.failed_scopes[message.ordering_scope] = min(previous, message.sequence)
        self.e._telemetry.message_done(message, outcome, key, code, detail)

    def blocked(self, message: InboundMessage) -> bool:
        scope = message.ordering_scope
        return (
            scope is not None
            and scope in self.failed_scopes
            and (message.sequence > self.failed_scopes[scope])
        )

    def skip_if_blocked(self, work_or_message: _Work[M] | InboundMessage) -> bool:
        message = work_or_message.message if isinstance(work_or_message, _Work) else work_or_message
        if not self.blocked(message):
            return False
        self.finish(
            work_or_message,
            Outcome.SKIPPED,
            detail="an earlier record of its ordering scope failed",
        )
        return True

    def time_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def out_of_time(self) -> bool:
        """Past the deadline (Lambda time left minus the margin): report the rest for
        redelivery so the invocation answers in time and keeps what it has done."""
        left = self.time_left()
        return left is not None and left <= 0

    # ---- the model -----------------------------------------------------------------------

    def execute(self) -> list[MessageResult]:
        now = self.e._clock()
        identified: list[tuple[InboundMessage, str, str]] = []
        poison: dict[int, tuple[str, str]] = {}  # sequence -> (error code, reason)
        for message in self.messages:
            digest = fingerprint(message)
            try:
                identified.append((message, self.e._keys.identify(message).key, digest))
            except (MissingMessageKey, UndecodableBody) as error:
                code = getattr(error, "code", "missing_key")
                poison[message.sequence] = (code, str(error))
                identified.append((message, _fallback_key(message), digest))
        try:
            known = self.e._store.fetch([key for _, key, _ in identified], now=int(now))
        except Exception as error:  # missing table, permissions, outage: retry the whole batch
            self.log.error(
                "inbox read failed; every record is reported for redelivery",
                extra={"error": f"{type(error).__name__}: {error}"},
            )
            for message in self.messages:
                self.finish(message, Outcome.FAILED, code="inbox_unavailable", detail=str(error))
            return self.ordered_results()

        leaders: dict[str, tuple[InboundMessage, str]] = {}
        followers: list[tuple[InboundMessage, str, str]] = []
        pending: list[_Work[M]] = []
        for message, key, digest in identified:
            if self.skip_if_blocked(message):
                continue
            if message.sequence in poison:
                code, reason = poison[message.sequence]
                self.dead_letter(message, key, digest, code, reason)
                continue
            record = known.get(key)
            if record is not None and record.status is Status.COMPLETED:
                self.settle_against(message, key, digest, record.fingerprint)
                continue
            if key in leaders and not self.supersedes(leaders[key], digest):
                followers.append((message, key, digest))
                continue
            leaders[key] = (message, digest)
            work = self.decide(message, key, digest)
            if work is not None:
                pending.append(work)

        for wave in plan_waves(pending):
            # A follower whose leader failed fails too, and must block its own scope before
            # later records of that scope commit.
            followers = self.settle_decided_followers(followers, leaders)
            live = [work for work in wave if not self.skip_if_blocked(work)]
            if self.out_of_time():
                for work in live:
                    self.finish(work, Outcome.FAILED, code="deadline", detail=DEADLINE_DETAIL)
                continue
            self.commit_wave(live)

        for message, key, digest in followers:
            self.settle_follower(message, key, digest, leaders[key])
        return self.ordered_results()

    def supersedes(self, leader: tuple[InboundMessage, str], digest: str) -> bool:
        """A new payload after a dead-lettered one (a producer's fix) is processed on its own,
        as it would be in a later batch: the FAILED record does not block it."""
        result = self.results.get(leader[0].sequence)
        return (
            result is not None and result.outcome is Outcome.DEAD_LETTERED and leader[1] != digest
        )

    def settle_decided_followers(
        self,
        followers: list[tuple[InboundMessage, str, str]],
        leaders: dict[str, tuple[InboundMessage, str]],
    ) -> list[tuple[InboundMessage, str, str]]:
        """Settle the followers whose leader has an outcome; return those still waiting."""
        waiting = []
        for follower in followers:
            message, key, digest = follower
            if leaders[key][0].sequence in self.results:
                self.settle_follower(message, key, digest, leaders[key])
            else:
                waiting.append(follower)
        return waiting

    def ordered_results(self) -> list[MessageResult]:
        return [self.results[message.sequence] for message in self.messages]

    def settle_against(
        self, message: InboundMessage, key: str, digest: str, stored_fingerprint: str | None
    ) -> None:
        """A completed record exists: a duplicate, unless the payload differs (producer bug)."""
        if stored_fingerprint in (None, digest):
            self.finish(message, Outcome.DUPLICATE, key)
            return
        self.dead_letter(
            message,
            key,
            digest,
            "fingerprint_mismatch",
            "a different payload was already processed under this message key",
            record_failure=False,
        )

    def settle_follower(
        self, message: InboundMessage, key: str, digest: str, leader: tuple[InboundMessage, str]
    ) -> None:
        """A later delivery of a key seen earlier in this batch follows its leader's outcome.

        Same payload: a duplicate of whatever the leader became (committed or dead-lettered).
        A different payload is checked like any payload conflict, never silently acknowledged.
        """
        if self.skip_if_blocked(message):
            return
        leader_message, leader_digest = leader
        if self.results[leader_message.sequence].outcome.needs_redelivery:
            self.finish(
                message,
                Outcome.FAILED,
                key,
                "leader_failed",
                "an earlier delivery of this key in the batch did not finish",
            )
        else:
            self.settle_against(message, key, digest, leader_digest)

    def decide(self, message: InboundMessage, key: str, digest: str) -> _Work[M] | None:
        try:
            payload = self.e._parse(message.json)
        except UndecodableBody as error:
            self.dead_letter(message, key, digest, error.code, str(error))
            return None
        # pydantic.ValidationError is a ValueError; plain callables (`Order(**raw)`) raise the rest.
        except (ValueError, TypeError, LookupError, AttributeError) as error:
            self.dead_letter(message, key, digest, "invalid_payload", _invalid_payload(error))
            return None
        uow = UnitOfWork(self.e._key_attributes)
        if not self.run_handler(message, key, digest, lambda: self.e._decide(payload, uow)):
            return None
        work = _Work(message, key, digest, payload, uow)
        work.items = self.items_of(work)
        return work

    def run_handler(
        self, message: InboundMessage, key: str, digest: str, call: Callable[[], object]
    ) -> bool:
        try:
            call()
        except PoisonMessage as error:
            self.dead_letter(message, key, digest, error.code, error.reason)
        except UnitOfWorkError as error:
            self.dead_letter(message, key, digest, "invalid_writes", str(error))
        except Exception as error:  # a bug or an outage in the handler: let the source retry
            self.log.exception(
                "handler raised; the record is reported for redelivery", extra={"message_key": key}
            )
            self.finish(message, Outcome.FAILED, key, "handler_error", _short(error))
        else:
            return True
        return False

    def items_of(self, work: _Work[M]) -> frozenset[str]:
        inbox = f"{self.e._store.table}|{self.e._store.partition_key(work.key)}"
        return frozenset([inbox, *(action.item_identity for action in work.uow.actions)])

    # ---- commit ------------------------------------------------------------------------

    def prepare(self, works: list[_Work[M]]) -> _Chunk[M]:
        now = self.e._clock()
        items: list[dict[str, Any]] = []
        owners: list[tuple[int, int]] = []
        for index, work in enumerate(works):
            items.append(
                self.e._store.completion_put(
                    work.message, work.key, work.fingerprint, work.uow.result, now=now
                )
            )
            owners.append((index, -1))
            for position, action in enumerate(work.uow.actions):
                items.append(action.transact_item())
                owners.append((index, position))
        return _Chunk(works, PreparedTransaction(items), owners)

    def commit_wave(self, works: list[_Work[M]]) -> None:
        """Commit one wave, retrying what can be retried, until every work has an outcome."""
        queue: list[_Chunk[M]] = self.chunks(works)
        round_number = 0
        while queue:
            attempts = self.run_chunks(queue)
            queue, regroup, backoff = [], [], False
            for chunk, attempt in attempts:
                self.attempts.append(attempt)
                self.e._telemetry.transaction_done(attempt, len(chunk.works))
                resend, requeue, transient = self.settle_chunk(chunk, attempt)
                queue.extend(resend)
                regroup.extend(requeue)
                backoff = backoff or transient
            queue.extend(self.chunks(regroup))
            if queue and backoff:
                round_number += 1
                if not self.pause(round_number):
                    for chunk in queue:
                        for work in chunk.works:
                            self.finish(
                                work,
                                Outcome.FAILED,
                                code="deadline",
                                detail=DEADLINE_DETAIL,
                            )
                    return

    def chunks(self, works: list[_Work[M]]) -> list[_Chunk[M]]:
        live = [work for work in works if not self.skip_if_blocked(work)]
        return [
            self.prepare(group)
            for group in chunk_wave(
                live,
                max_actions=self.config.max_transaction_actions,
                max_messages=self.config.max_group_messages,
            )
        ]

    def run_chunks(self, chunks: list[_Chunk[M]]) -> list[tuple[_Chunk[M], CommitAttempt]]:
        def send(chunk: _Chunk[M]) -> CommitAttempt:
            with self.e._telemetry.commit_span(len(chunk.works)):
                return execute(self.e._dynamodb, chunk.prepared)

        if len(chunks) == 1 or self.config.max_parallel_commits == 1:
            return [(chunk, send(chunk)) for chunk in chunks]
        workers = min(self.config.max_parallel_commits, len(chunks))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="inbox-commit") as pool:
            return list(zip(chunks, pool.map(send, chunks), strict=True))

    def pause(self, round_number: int) -> bool:
        """Jittered exponential backoff; False when the deadline leaves no room for it."""
        policy = self.config.retry
        delay = random.uniform(0, min(policy.max_delay, policy.base_delay * 2**round_number))
        left = self.time_left()
        if left is not None and left <= delay:
            return False
        self.e._sleep(delay)
        return True

    def settle_chunk(
        self, chunk: _Chunk[M], attempt: CommitAttempt
    ) -> tuple[list[_Chunk[M]], list[_Work[M]], bool]:
        """Apply one attempt's result. Returns (chunks to resend as-is, works to regroup, backoff)."""
        status = attempt.status
        if status is CommitStatus.COMMITTED:
            for work in chunk.works:
                outcome = Outcome.BUSINESS_OUTCOME if work.rounds else Outcome.COMMITTED
                self.finish(work, outcome, detail=f"{attempt.latency_ms:.1f} ms")
            return [], [], False
        if status is CommitStatus.UNAVAILABLE:
            for work in chunk.works:
                self.finish(work, Outcome.FAILED, code="dynamodb_unavailable", detail=attempt.error)
            return [], [], False
        if status is CommitStatus.REJECTED:
            if len(chunk.works) > 1:  # find the culprit: every message alone
                return [self.prepare([work]) for work in chunk.works], [], False
            work = chunk.works[0]
            self.dead_letter(
                work.message, work.key, work.fingerprint, "write_rejected", attempt.error
            )
            return [], [], False
        if status is CommitStatus.TRANSIENT:
            live = [work for work in chunk.works if self.count_attempt(work, attempt.error)]
            if len(live) == len(chunk.works):
                return [chunk], [], True  # same request, same token: safe after a timeout
            return [], live, True
        return [], *self.settle_cancellation(chunk, attempt)

    def count_attempt(self, work: _Work[M], error: str) -> bool:
        work.attempts += 1
        if work.attempts < self.config.retry.max_attempts:
            return True
        self.finish(work, Outcome.FAILED, code="retries_exhausted", detail=error)
        return False

    def settle_cancellation(
        self, chunk: _Chunk[M], attempt: CommitAttempt
    ) -> tuple[list[_Work[M]], bool]:
        per_work: list[list[tuple[int, CancellationReason]]] = [[] for _ in chunk.works]
        for (index, position), reason in zip(chunk.owners, attempt.reasons, strict=False):
            per_work[index].append((position, reason))
        if not any(reason.code != "None" for reasons in per_work for _, reason in reasons):
            # No usable reasons: treat the whole group as transient.
            return [work for work in chunk.works if self.count_attempt(work, attempt.error)], True
        regroup: list[_Work[M]] = []
        backoff = False
        for work, reasons in zip(chunk.works, per_work, strict=True):
            codes = {reason.code for _, reason in reasons}
            inbox = next((reason for position, reason in reasons if position < 0), None)
            if inbox is not None and inbox.code == "ConditionalCheckFailed":
                self.settle_inbox_conflict(work, inbox)
            elif codes & REJECTED_REASONS:
                detail = "; ".join(reason.message for _, reason in reasons if reason.code != "None")
                self.dead_letter(work.message, work.key, work.fingerprint, "write_rejected", detail)
            elif "ConditionalCheckFailed" in codes:
                failures = ConditionFailures(
                    tuple(
                        FailedCondition(
                            work.uow.actions[position],
                            deserialize_item(reason.item) if reason.item else None,
                        )
                        for position, reason in reasons
                        if reason.code == "ConditionalCheckFailed"
                    )
                )
                if self.redecide(work, failures):
                    regroup.append(work)
            elif codes & TRANSIENT_REASONS or codes - {"None"}:
                backoff = True
                if self.count_attempt(work, attempt.error):
                    regroup.append(work)
            else:
                regroup.append(work)  # innocent bystander of another message's failure
        return regroup, backoff

    def settle_inbox_conflict(self, work: _Work[M], reason: CancellationReason) -> None:
        """The inbox put lost: another delivery completed this key (or holds a lease)."""
        stored = deserialize_item(reason.item) if reason.item else {}
        status = stored.get("status", Status.COMPLETED.value)
        if status == Status.IN_PROGRESS.value:
            self.finish(
                work,
                Outcome.FAILED,
                code="in_progress",
                detail="another delivery holds a lease on this message",
            )
            return
        self.settle_against(work.message, work.key, work.fingerprint, stored.get("fingerprint"))

    def redecide(self, work: _Work[M], failures: ConditionFailures) -> bool:
        """Ask the handler for the alternative writes of a business outcome."""
        handler = self.e._on_condition_failed
        if handler is None or work.rounds + 1 >= MAX_DECISION_ROUNDS:
            reason = (
                "conditions failed: "
                + ", ".join(sorted(failures.labels))
                + ("" if handler else " (no on_condition_failed handler)")
            )
            self.dead_letter(work.message, work.key, work.fingerprint, "condition_failed", reason)
            return False
        uow = UnitOfWork(self.e._key_attributes)
        if not self.run_handler(
            work.message, work.key, work.fingerprint, lambda: handler(work.payload, failures, uow)
        ):
            return False
        work.uow = uow
        work.rounds += 1
        work.items = self.items_of(work)
        return True

    # ---- poison ----------------------------------------------------------------------------

    def dead_letter(
        self,
        message: InboundMessage,
        key: str,
        digest: str,
        code: str,
        reason: str,
        *,
        record_failure: bool = True,
    ) -> None:
        """Poison: DLQ first (nothing lost), then the FAILED record, then acknowledge."""
        if self.out_of_time():  # a poison storm must not run the invocation into its timeout
            self.finish(message, Outcome.FAILED, key, "deadline", DEADLINE_DETAIL)
            return
        queue = self.e._dead_letters
        if queue is None:
            self.finish(
                message,
                Outcome.FAILED,
                key,
                code,
                f"{reason} (no dead-letter queue configured: set DEAD_LETTER_QUEUE_URL)",
            )
            return
        try:
            queue.send(message, message_key=key, code=code, error=reason)
        except Exception as error:
            self.log.error(
                "dead-lettering failed; the record is reported for redelivery",
                extra={"message_key": key, "error": _short(error)},
            )
            self.finish(message, Outcome.FAILED, key, "dead_letter_failed", _short(error))
            return
        if record_failure:
            try:
                self.e._store.mark_failed(
                    message, key, digest, error_code=code, error=reason, now=self.e._clock()
                )
            except (
                Exception
            ) as error:  # the message is safe in the DLQ; the record is a convenience
                self.log.warning(
                    "could not write the FAILED inbox record",
                    extra={"message_key": key, "error": _short(error)},
                )
        self.finish(message, Outcome.DEAD_LETTERED, key, code, reason)


def _fallback_key(message: InboundMessage) -> str:
    """The key of a message whose own key cannot be read: the key it was dead-lettered under
    when it comes back from the DLQ (so a replay updates the same FAILED record), else the
    delivery id."""
    return message.attributes.get(MESSAGE_KEY_ATTRIBUTE) or message.delivery_id


def _invalid_payload(error: Exception) -> str:
    """Which fields failed and why, without the values: this text reaches logs, the DLQ
    attributes and the FAILED record, and payloads stay out of logs."""
    errors = getattr(error, "errors", None)
    if callable(errors):  # pydantic.ValidationError
        try:
            details = errors(include_url=False, include_input=False, include_context=False)
        except TypeError:
            details = None
        if details:
            fields = (
                f"{'.'.join(str(part) for part in item['loc']) or '<root>'}: {item['msg']}"
                for item in details[:10]
            )
            more = f" (+{len(details) - 10} more)" if len(details) > 10 else ""
            return _truncate("; ".join(fields) + more)
    return _short(error)


def _short(error: BaseException) -> str:
    return _truncate(f"{type(error).__name__}: {error}")


def _truncate(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
