"""Sending a batch's poison (`queue.DeadLettering`): the dead letters ten `SendMessageBatch`
entries a call, within SQS's 256 KiB, each call under the invocation's deadline, an entry a call
refuses sent again alone; then the FAILED records of what was sent, together (`store.failed`).
A call that fails (throttled, an outage, the deadline) ends the sending: what it and the calls
after it carry stays back, reported for redelivery, so that dead letters keep their order, and
in an ordering scope what follows an unsent one is held back behind it. Loaded by the first
poison message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from lambda_inbox._dead_letter.batches import send_each, send_sqs_batch, sqs_batches
from lambda_inbox._errors import DeadlineReached, ErrorCode, PoisonMessage, short_error
from lambda_inbox._outcomes import MessageResult, Outcome
from lambda_inbox._report import out_of_time, settled, skipped

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from mypy_boto3_sqs import SQSClient

    from lambda_inbox._internal.deadline import Deadline
    from lambda_inbox._messages import InboundMessage
    from lambda_inbox._sources.identity import Delivery
    from lambda_inbox.store import InboxStore

Poison = tuple["Delivery", PoisonMessage, bool]


class DeadLetterQueue(Protocol):
    """What sending reads of a dead-letter queue (`queue.DeadLetterQueue`)."""

    queue_url: str

    @property
    def client(self) -> SQSClient: ...

    def request(
        self, message: InboundMessage, *, message_key: str, code: str, error: str
    ) -> dict[str, Any]: ...


class DeadLettering(Protocol):
    """What sending reads of the dead-letter stage (`queue.DeadLettering`), which loads this
    module on first use: a type of its own here, so neither imports the other at first."""

    @property
    def queue(self) -> DeadLetterQueue | None: ...
    @property
    def store(self) -> InboxStore: ...
    @property
    def deadline(self) -> Deadline: ...
    @property
    def log(self) -> Logger: ...
    @property
    def now(self) -> Callable[[], float]: ...


def send_poison(stage: DeadLettering, waiting: list[Poison]) -> list[MessageResult]:
    """Each message's result, in order: dead-lettered, or failed (and why)."""
    if stage.deadline.expired():  # a poison storm must not run the invocation into its timeout
        return [out_of_time(delivery) for delivery, _, _ in waiting]
    if stage.queue is None:
        detail = "(no dead-letter queue configured: set DEAD_LETTER_QUEUE_URL)"
        return [
            settled(delivery, Outcome.FAILED, bad.code, f"{bad.reason} {detail}")
            for delivery, bad, _ in waiting
        ]
    sent = send_all(stage.queue, [(delivery, bad) for delivery, bad, _ in waiting], stage.deadline)
    results: list[MessageResult] = []
    to_record: list[Poison] = []
    failed_scopes: set[str] = set()
    for entry, outcome in zip(waiting, sent, strict=True):
        delivery, bad, record_failure = entry
        scope = delivery.message.ordering_scope
        if outcome is None:
            results.append(settled(delivery, Outcome.DEAD_LETTERED, bad.code, bad.reason))
            if record_failure:
                to_record.append(entry)
            continue
        if scope is not None:
            if scope in failed_scopes:  # held back behind an earlier record of its scope
                results.append(skipped(delivery))
                continue
            failed_scopes.add(scope)
        if isinstance(outcome, DeadlineReached):
            results.append(settled(delivery, Outcome.FAILED, ErrorCode.DEADLINE, str(outcome)))
        else:
            stage.log.error(
                "dead-lettering failed; the record is reported for redelivery",
                extra={"message_key": delivery.key, "error": short_error(outcome)},
            )
            code = ErrorCode.DEAD_LETTER_FAILED
            results.append(settled(delivery, Outcome.FAILED, code, short_error(outcome)))
    if to_record:
        record_failed(stage, to_record)
    return results


def send_all(
    queue: DeadLetterQueue, poison: list[tuple[Delivery, PoisonMessage]], deadline: Deadline
) -> list[Exception | None]:
    """For each message of `poison`, in order: None when it was sent, else the error that kept
    it back (the module docstring)."""
    entries = [
        {"Id": str(position), **_entry(queue, delivery, bad)}
        for position, (delivery, bad) in enumerate(poison)
    ]
    outcomes: list[Exception | None] = [None] * len(entries)
    for batch in sqs_batches(entries):
        first = int(batch[0]["Id"])
        try:
            _, refused = deadline.run(send_sqs_batch, queue.client, queue.queue_url, batch)
            if refused:
                alone = [entries[int(entry_id)] for entry_id, _ in refused]
                _, refused = deadline.run(send_each, queue.client, queue.queue_url, alone)
        except Exception as error:
            outcomes[first:] = [error] * (len(entries) - first)
            break
        for entry_id, reason in refused:
            outcomes[int(entry_id)] = RuntimeError(f"SQS refused the dead letter: {reason}")
    return outcomes


def _entry(queue: DeadLetterQueue, delivery: Delivery, poison: PoisonMessage) -> dict[str, Any]:
    request = queue.request(
        delivery.message, message_key=delivery.key, code=poison.code, error=poison.reason
    )
    del request["QueueUrl"]
    return request


def record_failed(stage: DeadLettering, entries: list[Poison]) -> None:
    """The FAILED records of what was dead-lettered, together; best effort: the messages are
    safe in the DLQ, the records are a convenience."""
    from lambda_inbox.store._failed import failed_put, put_together

    now = stage.now()
    puts = [
        failed_put(
            stage.store,
            delivery.message,
            delivery.key,
            delivery.fingerprint,
            error_code=bad.code,
            error=bad.reason,
            now=now,
        )
        for delivery, bad, _ in entries
    ]
    try:
        stage.deadline.run(put_together, stage.store.client, puts)
    except Exception as error:
        stage.log.warning(
            "could not write the FAILED inbox records",
            extra={
                "message_keys": [delivery.key for delivery, _, _ in entries],
                "error": short_error(error),
            },
        )
