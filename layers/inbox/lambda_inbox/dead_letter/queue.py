"""Dead-letter: poison goes to an SQS queue with its original body and attributes.

`DeadLettering` is the stage (DLQ first, then the FAILED inbox record, then acknowledge);
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
from lambda_inbox.report import settled
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
    Returns each message's result; the pipeline records it."""

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

    def dead_letter(
        self, delivery: Delivery, poison: PoisonMessage, *, record_failure: bool = True
    ) -> MessageResult:
        code, reason = poison.code, poison.reason
        if self._deadline.expired():  # a poison storm must not run the invocation into its timeout
            return settled(delivery, Outcome.FAILED, ErrorCode.DEADLINE, DEADLINE_DETAIL)
        if self._queue is None:
            detail = f"{reason} (no dead-letter queue configured: set DEAD_LETTER_QUEUE_URL)"
            return settled(delivery, Outcome.FAILED, code, detail)
        try:
            self._deadline.run(
                self._queue.send,
                delivery.message,
                message_key=delivery.key,
                code=code,
                error=reason,
            )
        except DeadlineReached as error:
            return settled(delivery, Outcome.FAILED, ErrorCode.DEADLINE, str(error))
        except Exception as error:
            self._log.error(
                "dead-lettering failed; the record is reported for redelivery",
                extra={"message_key": delivery.key, "error": short_error(error)},
            )
            code_failed = ErrorCode.DEAD_LETTER_FAILED
            return settled(delivery, Outcome.FAILED, code_failed, short_error(error))
        if record_failure:
            self._mark_failed(delivery, code, reason)
        return settled(delivery, Outcome.DEAD_LETTERED, code, reason)

    def _mark_failed(self, delivery: Delivery, code: str, reason: str) -> None:
        try:
            self._deadline.run(
                self._store.mark_failed,
                delivery.message,
                delivery.key,
                delivery.fingerprint,
                error_code=code,
                error=reason,
                now=self._now(),
            )
        except Exception as error:  # the message is safe in the DLQ; the record is a convenience
            self._log.warning(
                "could not write the FAILED inbox record",
                extra={"message_key": delivery.key, "error": short_error(error)},
            )
