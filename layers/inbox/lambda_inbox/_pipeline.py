"""The processing model for one batch, whatever the source (docs/architecture.md), in order:

1. identify each message (key, fingerprint; poison if unreadable),
2. skip known duplicates with one eventually consistent read of the inbox keys, when something
   suggests a duplicate (`duplicate_read`); otherwise the commit finds them (poison found
   while deciding reads them then, before anything is dead-lettered),
3. decide each remaining message's writes through a unit of work,
4. commit them with their inbox records, in waves of transactions,
5. classify each attempt's outcome and act on it (inside `Committer`),
6. dead-letter poison, and report every message's outcome.

Each stage returns (or yields) the results it settles; only the pipeline records them in the
batch's report, one at a time, so each stage reads the ordering that earlier results imply.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Generic, TypeVar

from lambda_inbox._commit.committer import Committer
from lambda_inbox._commit.decision import Decider, Decision
from lambda_inbox._commit.planner import plan_waves
from lambda_inbox._dead_letter.queue import DeadLettering
from lambda_inbox._errors import (
    DeadlineReached,
    ErrorCode,
    HandlerFailed,
    PoisonMessage,
    truncate,
)
from lambda_inbox._outcomes import MessageResult, Outcome
from lambda_inbox._report import BatchReport, out_of_time, settled
from lambda_inbox._sources.identity import Delivery, KeyStrategy, identify
from lambda_inbox._triage import ReadFirst, Triage

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from lambda_inbox._commit.send import CommitAttempt
    from lambda_inbox._config import InboxConfig
    from lambda_inbox._dead_letter.queue import DeadLetterQueue
    from lambda_inbox._internal.deadline import Deadline
    from lambda_inbox._leases.leased import Leases
    from lambda_inbox._messages import InboundMessage
    from lambda_inbox._telemetry import Telemetry
    from lambda_inbox.store import InboxRecord, InboxStore

M = TypeVar("M")
#: Why a batch holding poison reads its inbox keys before dead-lettering anything, also when the
#: poison is found while deciding: a poison message that completed before is a duplicate, and
#: nothing is dead-lettered while the inbox table cannot be read (a missing table, an outage).
POISON = "poison"
_POISON = attrgetter("poison")


class Pipeline(Generic[M]):
    """Runs the processing model for one consumer. Batches may run concurrently in one process
    (the clients are thread-safe); Powertools metrics are process-wide, so they share one set."""

    def __init__(
        self,
        *,
        config: InboxConfig,
        dynamodb: DynamoDBClient,
        store: InboxStore,
        dead_letter_queue: DeadLetterQueue | None,
        keys: KeyStrategy,
        decider: Decider[M],
        telemetry: Telemetry,
        now: Callable[[], float] = time.time,
        leases: Leases[M] | None = None,
    ) -> None:
        self._config = config
        self._dynamodb = dynamodb
        self._store = store
        self._dead_letter_queue = dead_letter_queue
        self._keys = keys
        self._decider = decider
        self._telemetry = telemetry
        self._now = now
        #: Leased mode (`leases`): claim and side effect between decide and commit.
        self._leases = leases
        self._read_first = ReadFirst(
            config.commit.duplicate_read,
            leased=leases is not None,
            creates_items=decider.creates_items,
        )

    def process(
        self, messages: Sequence[InboundMessage], deadline: Deadline
    ) -> list[MessageResult]:
        report = BatchReport(messages, self._telemetry)
        canonical = self._decider.canonical_form
        deliveries = [identify(message, self._keys, canonical) for message in report.messages]
        read_first = self._read_first.reason(messages)
        if read_first is None and any(map(_POISON, deliveries)):
            read_first = POISON
        read_first, attempts = self._run(report, deliveries, deadline, read_first)
        results = report.results()
        self._read_first.observe(results)
        self._telemetry.batch_done(results, attempts, read_first)
        return results

    def _run(
        self,
        report: BatchReport,
        deliveries: list[Delivery],
        deadline: Deadline,
        read_first: str | None,
    ) -> tuple[str | None, list[CommitAttempt]]:
        """The stages after identify; returns why the inbox keys were read (None: they were
        not) and the commit attempts made."""
        known = self._known_records(deliveries, report, deadline) if read_first else {}
        if known is None:
            return read_first, []
        dead_letters = DeadLettering(
            queue=self._dead_letter_queue,
            store=self._store,
            deadline=deadline,
            logger=self._telemetry.logger,
            now=self._now,
        )
        triage = Triage(report, dead_letters)
        decisions: list[Decision[M]] = []
        for delivery in deliveries:
            result = triage.settle_known(delivery, known.get(delivery.key))
            if result is not None:
                report.record(result)
                continue
            if delivery.key in dead_letters.pending_keys:  # its leader's fate says what it is
                report.record_all(dead_letters.flush())
            if not triage.lead(delivery):
                continue  # a follower: settled once its leader has an outcome
            try:
                decided = self._decide(delivery, deadline)
            except PoisonMessage as poison:
                if read_first is None:  # the first poison of a batch not read: read it now
                    read_first = POISON
                    known = self._known_records(deliveries, report, deadline)
                    if known is None:
                        return read_first, []
                    decisions = self._not_completed(decisions, triage, known, report)
                    late = triage.completed(delivery, known)
                    if late is not None:
                        report.record(late)
                        continue
                report.record(dead_letters.defer(delivery, poison))
                continue
            if isinstance(decided, MessageResult):
                report.record(decided)
            else:
                decisions.append(decided)
        # The batch's poison goes out before anything commits: a dead letter that cannot be
        # sent fails its record, which holds back what follows it in its ordering scope.
        report.record_all(dead_letters.flush())
        if self._leases is not None:  # leased mode
            ready: list[Decision[M]] = []
            for decision in decisions:
                leased = self._leases.lease(
                    decision,
                    batch=report,
                    triage=triage,
                    dead_letters=dead_letters,
                    deadline=deadline,
                )
                if leased is None:
                    ready.append(decision)
                else:
                    report.record(leased)
            decisions = ready
        committer = Committer(
            dynamodb=self._dynamodb,
            store=self._store,
            config=self._config,
            decider=self._decider,
            triage=triage,
            dead_letters=dead_letters,
            batch=report,
            deadline=deadline,
            telemetry=self._telemetry,
            now=self._now,
        )
        for wave in plan_waves(decisions):
            report.record_all(triage.settle_followers())
            report.record_all(committer.commit_wave(wave))
            report.record_all(dead_letters.flush())
        report.record_all(triage.settle_followers(final=True))
        report.record_all(dead_letters.flush())
        return read_first, committer.attempts

    @staticmethod
    def _not_completed(
        decisions: list[Decision[M]],
        triage: Triage,
        known: dict[str, InboxRecord],
        report: BatchReport,
    ) -> list[Decision[M]]:
        """The decisions whose key the late read did not find completed (those it did are
        recorded: duplicates or mismatches)."""
        remaining = []
        for decision in decisions:
            result = triage.completed(decision.delivery, known)
            if result is None:
                remaining.append(decision)
            else:
                report.record(result)
        return remaining

    def _known_records(
        self, deliveries: list[Delivery], report: BatchReport, deadline: Deadline
    ) -> dict[str, InboxRecord] | None:
        """The batch read; None (every record reported for redelivery) when it fails."""
        try:
            keys = [delivery.key for delivery in deliveries]
            known: dict[str, InboxRecord] = deadline.run(
                self._store.fetch, keys, now=self._now(), pause=deadline.sleep
            )
        except DeadlineReached as error:  # a hanging or slow endpoint: retry the whole batch
            code, detail = ErrorCode.DEADLINE, str(error)
        except Exception as error:  # missing table, permissions, outage: retry the whole batch
            from lambda_inbox._internal.table_names import described

            detail = described(error, [self._store.table])
            self._telemetry.logger.error(
                "inbox read failed; every record is reported for redelivery",
                extra={"error": truncate(detail)},
            )
            code = ErrorCode.INBOX_UNAVAILABLE
        else:
            return known
        report.record_all(settled(d, Outcome.FAILED, code, detail) for d in deliveries)
        return None

    def _decide(self, delivery: Delivery, deadline: Deadline) -> Decision[M] | MessageResult:
        """The handler's decision, or the message's result when it failed. Raises
        `PoisonMessage`."""
        if deadline.expired():  # a slow handler must not run the invocation into its timeout
            return out_of_time(delivery)
        try:
            return self._decider.decide(delivery)
        except HandlerFailed as error:
            self._telemetry.logger.exception(
                "handler raised; the record is reported for redelivery",
                extra={"message_key": delivery.key},
            )
            return settled(delivery, Outcome.FAILED, error.code, str(error))
