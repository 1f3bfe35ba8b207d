"""Commit: decisions go to DynamoDB in waves of transactions, until each has an outcome.

A wave holds decisions that touch no common item but through commuting updates (see `planner`);
it is cut into transactions of at most 100 actions / 4 MB / `max_group_messages` messages, which
are sent in parallel; the commuting updates of one item in a transaction become one action. Each
attempt is classified (`settle`) and acted on: committed; the inbox taken (a duplicate); a
business outcome decided again and retried; refused writes split and dead-lettered; transient
failures retried with backoff within the deadline; what cannot finish is reported for
redelivery.

The committer yields each message's result as it is settled; the pipeline records it before the
committer goes on, so a failure blocks the later records of its ordering scope at once.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Generic, TypeVar

from lambda_inbox._commit.decision import Decider, Decision
from lambda_inbox._commit.planner import chunk_wave
from lambda_inbox._commit.send import CommitAttempt, CommitStatus, send
from lambda_inbox._commit.settle import VerdictKind, settle
from lambda_inbox._commit.transactions import Transaction, build_transaction, put_alone
from lambda_inbox._commit.verdicts import FinalVerdicts
from lambda_inbox._errors import DeadlineReached, ErrorCode
from lambda_inbox._outcomes import MessageResult, Outcome
from lambda_inbox._report import Pending, out_of_time, settled, skipped

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from lambda_inbox._config import InboxConfig
    from lambda_inbox._dead_letter.queue import DeadLettering
    from lambda_inbox._internal.deadline import Deadline
    from lambda_inbox._report import BatchView
    from lambda_inbox._telemetry import Telemetry
    from lambda_inbox._triage import Triage
    from lambda_inbox.store import InboxStore

M = TypeVar("M")
#: Verdicts that leave a decision without an outcome yet.
_UNSETTLED = frozenset({VerdictKind.TRANSIENT, VerdictKind.SPLIT, VerdictKind.BYSTANDER})


class Committer(Generic[M]):
    """Commits the waves of one batch."""

    def __init__(
        self,
        *,
        dynamodb: DynamoDBClient,
        store: InboxStore,
        config: InboxConfig,
        decider: Decider[M],
        triage: Triage,
        dead_letters: DeadLettering,
        batch: BatchView,
        deadline: Deadline,
        telemetry: Telemetry,
        now: Callable[[], float],
    ) -> None:
        self._dynamodb = dynamodb
        self._store = store
        self._config = config
        self._triage = triage
        self._puts_alone = decider.puts_alone
        self._verdicts = FinalVerdicts(
            decider=decider,
            triage=triage,
            dead_letters=dead_letters,
            telemetry=telemetry,
        )
        self._batch = batch
        self._deadline = deadline
        self._telemetry = telemetry
        self._now = now
        #: Every commit attempt of the batch, for its metrics.
        self.attempts: list[CommitAttempt] = []

    def commit_wave(self, wave: list[Decision[M]]) -> Iterator[MessageResult | Pending]:
        """Commit one wave, retrying what can be retried, until every decision has a result;
        yields each result (recorded by the caller before the committer goes on)."""
        transactions = yield from self._transactions(wave)
        round_number = 0
        while transactions:
            if self._deadline.expired():
                yield from self._fail_deadline(transactions)
                return
            retry: list[Transaction[M]] = []
            regroup: list[Decision[M]] = []
            backoff = False
            for transaction, attempt in self._send_all(transactions):
                resend, again, transient = yield from self._apply(transaction, attempt)
                retry.extend(resend)
                regroup.extend(again)
                backoff = backoff or transient
            transactions = retry + (yield from self._transactions(regroup))
            if transactions and backoff:
                round_number += 1
                if not self._deadline.sleep(self._config.retry.backoff(round_number)):
                    yield from self._fail_deadline(transactions)
                    return

    def _transactions(
        self, decisions: list[Decision[M]]
    ) -> Generator[MessageResult | Pending, None, list[Transaction[M]]]:
        # A leader that just failed fails its followers, which blocks their scopes before a
        # later record there (one sharing a merged update with the leader) is sent again.
        yield from self._triage.settle_followers()
        live: list[Decision[M]] = []
        for decision in decisions:
            if self._batch.blocked(decision.delivery):
                yield skipped(decision.delivery)
            else:
                live.append(decision)
        puts: list[Transaction[M]] = []
        if self._puts_alone:  # a CreatesItem consumer's puts go one by one; fallbacks together
            puts = [put_alone(decision) for decision in live if decision.creates]
            live = [decision for decision in live if not decision.creates]
        return puts + [
            build_transaction(self._store, group, now=self._now())
            for group in chunk_wave(
                live,
                max_actions=self._config.commit.max_transaction_actions,
                max_messages=self._config.commit.max_group_messages,
            )
        ]

    def _send_all(
        self, transactions: list[Transaction[M]]
    ) -> list[tuple[Transaction[M], CommitAttempt]]:
        """Every transaction of the wave at once, on the consumer's call workers (at most
        `max_parallel_commits` run side by side), each bounded by the deadline."""
        deadline = self._deadline

        def start(transaction: Transaction[M]) -> Future[CommitAttempt] | CommitAttempt:
            try:
                return deadline.start(send, self._dynamodb, transaction.request)
            except DeadlineReached as error:
                return CommitAttempt(CommitStatus.TRANSIENT, error=str(error))

        def finish(
            transaction: Transaction[M], started: Future[CommitAttempt] | CommitAttempt
        ) -> CommitAttempt:
            if isinstance(started, CommitAttempt):
                return started
            with self._telemetry.commit_span(len(transaction.decisions)):
                try:
                    return deadline.wait(started)
                except DeadlineReached as error:  # outcome unknown; retried only if time allows
                    return CommitAttempt(CommitStatus.TRANSIENT, error=str(error))

        started = [start(transaction) for transaction in transactions]
        attempts = [finish(t, s) for t, s in zip(transactions, started, strict=True)]
        for transaction, attempt in zip(transactions, attempts, strict=True):
            self.attempts.append(attempt)
            self._telemetry.transaction_done(attempt, len(transaction.decisions))
        return list(zip(transactions, attempts, strict=True))

    def _apply(
        self, transaction: Transaction[M], attempt: CommitAttempt
    ) -> Generator[
        MessageResult | Pending, None, tuple[list[Transaction[M]], list[Decision[M]], bool]
    ]:
        """Act on one attempt, yielding the results it settles. Returns (transactions to resend
        as they are, decisions to regroup, whether to back off first)."""
        decisions = transaction.decisions
        actions = [decision.actions for decision in decisions]
        verdicts = settle(attempt, actions, transaction.owners, transaction.shared)
        kinds = {verdict.kind for verdict in verdicts}
        if kinds == {VerdictKind.TRANSIENT} and not attempt.reasons:
            live: list[Decision[M]] = []
            for decision in decisions:
                exhausted = self._count_attempt(decision, attempt)
                if exhausted is None:
                    live.append(decision)
                else:
                    yield exhausted
            if len(live) == len(decisions):  # same request, same token: safe after a timeout
                return [transaction], [], True
            return [], live, True
        if kinds == {VerdictKind.SPLIT}:  # find the culprit: every message alone
            return [self._alone(decision) for decision in decisions], [], False
        regroup: list[Decision[M]] = []
        alone: list[Transaction[M]] = []
        backoff = False
        for decision, verdict in zip(decisions, verdicts, strict=True):
            if verdict.kind in _UNSETTLED and self._batch.blocked(decision.delivery):
                yield skipped(decision.delivery)  # an earlier record of its scope just failed
                continue
            if verdict.kind == VerdictKind.SPLIT:  # owned a refused merged update
                alone.append(self._alone(decision))
                continue
            result: MessageResult | Pending | None
            if verdict.kind == VerdictKind.TRANSIENT:
                backoff = True
                result = self._count_attempt(decision, attempt)
            else:
                result = self._verdicts.act(decision, verdict)
            if result is None:
                regroup.append(decision)
            else:
                yield result
        return alone, regroup, backoff

    def _alone(self, decision: Decision[M]) -> Transaction[M]:
        return build_transaction(self._store, [decision], now=self._now())

    def _count_attempt(self, decision: Decision[M], attempt: CommitAttempt) -> MessageResult | None:
        """None while the decision has attempts left; then its RETRIES_EXHAUSTED result."""
        decision.attempts += 1
        if decision.attempts < self._config.retry.max_attempts:
            return None
        return settled(
            decision.delivery, Outcome.FAILED, ErrorCode.RETRIES_EXHAUSTED, attempt.error
        )

    def _fail_deadline(
        self, transactions: list[Transaction[M]]
    ) -> Iterator[MessageResult | Pending]:
        for transaction in transactions:
            for decision in transaction.decisions:
                if self._batch.blocked(decision.delivery):
                    yield skipped(decision.delivery)
                else:
                    yield out_of_time(decision.delivery)
