"""Dead-letter: poison goes to an SQS queue with its original body and attributes.

`DeadLettering` is the stage (DLQ first, then the FAILED inbox record, then acknowledge; the
poison of a batch sent and recorded together);
`DeadLetterQueue` is the SQS transport. What a dead letter holds is the envelope's
(`envelope`, docs/bad-input.md "The dead-letter envelope").
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from lambda_inbox.deadline import Deadline
from lambda_inbox.errors import DeadlineReached, ErrorCode, PoisonMessage, short_error
from lambda_inbox.messages import InboundMessage
from lambda_inbox.outcomes import MessageResult, Outcome
from lambda_inbox.report import PENDING, Pending, settled, skipped
from lambda_inbox.sources.identity import Delivery

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from mypy_boto3_sqs import SQSClient

    from lambda_inbox.store import InboxStore

DEADLINE_DETAIL = "no time left before the Lambda deadline; reported for redelivery"


class DeadLetterQueue:
    """Sends poison messages to one SQS queue (standard or FIFO).

    `client` may be a factory: the SQS client is then built on the first poison message, not at
    cold start (most invocations never dead-letter anything).
    """

    def __init__(self, client: SQSClient | Callable[[], SQSClient], queue_url: str) -> None:
        self._client_or_factory = client
        self.queue_url = queue_url

    @cached_property
    def client(self) -> SQSClient:
        """The SQS client that sends (built from the factory on first use)."""
        if callable(self._client_or_factory) and not hasattr(
            self._client_or_factory, "send_message"
        ):
            return self._client_or_factory()
        return self._client_or_factory  # type: ignore[return-value]

    def send(self, message: InboundMessage, *, message_key: str, code: str, error: str) -> str:
        """Dead-letter `message`; returns the new SQS message id. Raises on failure."""
        request = self.request(message, message_key=message_key, code=code, error=error)
        return self.client.send_message(**request)["MessageId"]

    def send_all(
        self, poison: list[tuple[Delivery, PoisonMessage]], deadline: Deadline
    ) -> list[Exception | None]:
        """Dead-letter each message of `poison`, ten `SendMessageBatch` entries a call within
        SQS's 256 KiB, each call under `deadline`; an entry a call refuses is sent again alone.
        A call that fails (throttled, an outage, the deadline) ends the sending: what it and the
        calls after it carry stays back, so that dead letters keep their order. For each message
        in order: None when it was sent, else the error that kept it back."""
        from lambda_inbox.dead_letter.batches import send_each, send_sqs_batch, sqs_batches

        entries = [
            {"Id": str(position), **self._entry(delivery, bad)}
            for position, (delivery, bad) in enumerate(poison)
        ]
        outcomes: list[Exception | None] = [None] * len(entries)
        for batch in sqs_batches(entries):
            first = int(batch[0]["Id"])
            try:
                _, refused = deadline.run(send_sqs_batch, self.client, self.queue_url, batch)
                if refused:
                    alone = [entries[int(entry_id)] for entry_id, _ in refused]
                    _, refused = deadline.run(send_each, self.client, self.queue_url, alone)
            except Exception as error:
                outcomes[first:] = [error] * (len(entries) - first)
                break
            for entry_id, reason in refused:
                outcomes[int(entry_id)] = RuntimeError(f"SQS refused the dead letter: {reason}")
        return outcomes

    def _entry(self, delivery: Delivery, poison: PoisonMessage) -> dict[str, Any]:
        request = self.request(
            delivery.message, message_key=delivery.key, code=poison.code, error=poison.reason
        )
        del request["QueueUrl"]
        return request

    def request(
        self, message: InboundMessage, *, message_key: str, code: str, error: str
    ) -> dict[str, Any]:
        """The `SendMessage` request for `message` (`envelope.send_message_request`)."""
        from lambda_inbox.dead_letter.envelope import (
            send_message_request,  # loaded by the first poison message
        )

        return send_message_request(
            self.queue_url, message, message_key=message_key, code=code, error=error
        )


class DeadLettering:
    """The dead-letter stage of one batch: DLQ first (nothing lost), then the FAILED record
    (an incident artifact; best effort, the message is already safe), then acknowledge.

    Poison waits (`defer`) until the pipeline `flush`es it, before anything of the batch is
    committed: then it goes out ten `SendMessageBatch` entries a call (within SQS's 256 KiB),
    an entry a call refuses is sent again alone, and the FAILED records of all that was sent are
    written together (`store.failed`). So a batch of poison costs what a batch of good messages
    does: one call to SQS and one to DynamoDB per ten. `dead_letter` sends one message at once
    (leased mode). The results go back to the pipeline, which records them."""

    def __init__(
        self,
        *,
        queue: DeadLetterQueue | None,
        store: InboxStore,
        deadline: Deadline,
        logger: Logger,
        now: Callable[[], float],
    ) -> None:
        self._queue = queue
        self._store = store
        self._deadline = deadline
        self._log = logger
        self._now = now
        self._pending: list[_Poison] = []
        #: The keys of the poison waiting for the next `flush`.
        self.pending_keys: set[str] = set()

    def defer(
        self, delivery: Delivery, poison: PoisonMessage, *, record_failure: bool = True
    ) -> Pending:
        """Dead-letter `delivery` with the next `flush`; its result comes from there."""
        self._pending.append(_Poison(delivery, poison, record_failure))
        self.pending_keys.add(delivery.key)
        return PENDING

    def flush(self) -> list[MessageResult]:
        """Send what waits (the class docstring); each message's result, in order."""
        if not self._pending:  # nearly every batch: no poison
            return []
        waiting, self._pending = self._pending, []
        self.pending_keys = set()
        return self._send(waiting)

    def dead_letter(
        self, delivery: Delivery, poison: PoisonMessage, *, record_failure: bool = True
    ) -> MessageResult:
        """Dead-letter `delivery` now, alone."""
        return self._send([_Poison(delivery, poison, record_failure)])[0]

    def _send(self, waiting: list[_Poison]) -> list[MessageResult]:
        if self._deadline.expired():  # a poison storm must not run the invocation into its timeout
            return [
                settled(p.delivery, Outcome.FAILED, ErrorCode.DEADLINE, DEADLINE_DETAIL)
                for p in waiting
            ]
        if self._queue is None:
            detail = "(no dead-letter queue configured: set DEAD_LETTER_QUEUE_URL)"
            return [
                settled(p.delivery, Outcome.FAILED, p.poison.code, f"{p.poison.reason} {detail}")
                for p in waiting
            ]
        sent = self._queue.send_all([(p.delivery, p.poison) for p in waiting], self._deadline)
        results: list[MessageResult] = []
        failed_records = []
        failed_scopes: set[str] = set()
        for entry, outcome in zip(waiting, sent, strict=True):
            delivery, code, reason = entry.delivery, entry.poison.code, entry.poison.reason
            scope = delivery.message.ordering_scope
            if outcome is None:
                results.append(settled(delivery, Outcome.DEAD_LETTERED, code, reason))
                if entry.record_failure:
                    failed_records.append(entry)
                continue
            if scope is not None:
                if scope in failed_scopes:  # held back behind an earlier record of its scope
                    results.append(skipped(delivery))
                    continue
                failed_scopes.add(scope)
            if isinstance(outcome, DeadlineReached):
                results.append(settled(delivery, Outcome.FAILED, ErrorCode.DEADLINE, str(outcome)))
            else:
                self._log.error(
                    "dead-lettering failed; the record is reported for redelivery",
                    extra={"message_key": delivery.key, "error": short_error(outcome)},
                )
                code_failed = ErrorCode.DEAD_LETTER_FAILED
                results.append(settled(delivery, Outcome.FAILED, code_failed, short_error(outcome)))
        if failed_records:
            self._mark_failed(failed_records)
        return results

    def _mark_failed(self, entries: list[_Poison]) -> None:
        from lambda_inbox.store.failed import failed_put, put_together

        now = self._now()
        puts = [
            failed_put(
                self._store,
                entry.delivery.message,
                entry.delivery.key,
                entry.delivery.fingerprint,
                error_code=entry.poison.code,
                error=entry.poison.reason,
                now=now,
            )
            for entry in entries
        ]
        try:
            self._deadline.run(put_together, self._store.client, puts)
        except Exception as error:  # the messages are safe in the DLQ; the records a convenience
            self._log.warning(
                "could not write the FAILED inbox records",
                extra={
                    "message_keys": [entry.delivery.key for entry in entries],
                    "error": short_error(error),
                },
            )


class _Poison:
    """Poison waiting to be dead-lettered."""

    __slots__ = ("delivery", "poison", "record_failure")

    def __init__(self, delivery: Delivery, poison: PoisonMessage, record_failure: bool) -> None:
        self.delivery = delivery
        self.poison = poison
        self.record_failure = record_failure
