"""The processing model for one batch, whatever the source (docs/architecture.md), in order:

1. identify each message (key, fingerprint; poison if unreadable),
2. skip known duplicates with one eventually consistent read of the inbox keys,
3. decide each remaining message's writes through a unit of work,
4. commit them with their inbox records, in waves of transactions,
5. classify each attempt's outcome and act on it (inside `Committer`),
6. dead-letter poison, and report every message's outcome.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from .committer import Committer
from .dead_letter import DEADLINE_DETAIL, DeadLettering
from .decision import Decider, Decision, short_error
from .errors import DeadlineReached, ErrorCode, HandlerFailed, PoisonMessage
from .identity import Delivery, KeyStrategy, identify
from .outcomes import MessageResult, Outcome
from .planner import plan_waves
from .report import BatchReport
from .triage import Triage

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .config import InboxConfig
    from .dead_letter import DeadLetterQueue
    from .deadline import Deadline
    from .lease import Leases
    from .messages import InboundMessage
    from .observability import Telemetry
    from .store import InboxRecord, InboxStore

M = TypeVar("M")


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
        #: Leased mode (lease.py): claim and side effect between decide and commit.
        self._leases = leases

    def process(
        self, messages: Sequence[InboundMessage], deadline: Deadline
    ) -> list[MessageResult]:
        report = BatchReport(messages, self._telemetry)
        self._run(report, deadline)
        results = report.results()
        self._telemetry.batch_done(results, report.attempts)
        return results

    def _run(self, report: BatchReport, deadline: Deadline) -> None:
        deliveries = [identify(message, self._keys) for message in report.messages]
        known = self._known_records(deliveries, report, deadline)
        if known is None:
            return
        dead_letters = DeadLettering(
            queue=self._dead_letter_queue,
            store=self._store,
            report=report,
            deadline=deadline,
            logger=self._telemetry.logger,
            now=self._now,
        )
        triage = Triage(report, dead_letters)
        decisions: list[Decision[M]] = []
        for delivery in deliveries:
            if triage.admit(delivery, known.get(delivery.key)):
                decision = self._decide(delivery, report, dead_letters, deadline)
                if decision is not None:
                    decisions.append(decision)
        if self._leases is not None:  # leased mode: see lease.py
            decisions = self._leases.run(
                decisions,
                report=report,
                triage=triage,
                dead_letters=dead_letters,
                deadline=deadline,
            )
        committer = Committer(
            dynamodb=self._dynamodb,
            store=self._store,
            config=self._config,
            decider=self._decider,
            triage=triage,
            dead_letters=dead_letters,
            report=report,
            deadline=deadline,
            telemetry=self._telemetry,
            now=self._now,
        )
        for wave in plan_waves(decisions):
            triage.settle_followers()
            committer.commit_wave(wave)
        triage.settle_followers(final=True)

    def _known_records(
        self, deliveries: list[Delivery], report: BatchReport, deadline: Deadline
    ) -> dict[str, InboxRecord] | None:
        """The batch read; None (every record reported for redelivery) when it fails."""
        try:
            keys = [delivery.key for delivery in deliveries]
            known: dict[str, InboxRecord] = deadline.run(self._store.fetch, keys, now=self._now())
        except DeadlineReached as error:  # a hanging or slow endpoint: retry the whole batch
            code, detail = ErrorCode.DEADLINE, str(error)
        except Exception as error:  # missing table, permissions, outage: retry the whole batch
            self._telemetry.logger.error(
                "inbox read failed; every record is reported for redelivery",
                extra={"error": short_error(error)},
            )
            code, detail = ErrorCode.INBOX_UNAVAILABLE, str(error)
        else:
            return known
        for delivery in deliveries:
            report.record(delivery, Outcome.FAILED, code, detail)
        return None

    def _decide(
        self,
        delivery: Delivery,
        report: BatchReport,
        dead_letters: DeadLettering,
        deadline: Deadline,
    ) -> Decision[M] | None:
        if deadline.expired():  # a slow handler must not run the invocation into its timeout
            report.record(delivery, Outcome.FAILED, ErrorCode.DEADLINE, DEADLINE_DETAIL)
            return None
        try:
            return self._decider.decide(delivery)
        except PoisonMessage as poison:
            dead_letters.dead_letter(delivery, poison)
        except HandlerFailed as error:
            self._telemetry.logger.exception(
                "handler raised; the record is reported for redelivery",
                extra={"message_key": delivery.key},
            )
            report.record(delivery, Outcome.FAILED, error.code, str(error))
        return None
