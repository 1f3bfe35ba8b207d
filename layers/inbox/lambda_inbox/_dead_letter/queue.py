"""Dead-letter: poison goes to an SQS queue with its original body and attributes.

`DeadLettering` is the stage (DLQ first, then the FAILED inbox record, then acknowledge; the
poison of a batch sent and recorded together);
`DeadLetterQueue` is the SQS transport. What a dead letter holds is the envelope's
(`envelope`, docs/bad-input.md "The dead-letter envelope").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from lambda_inbox._internal.deadline import Deadline
from lambda_inbox._messages import InboundMessage
from lambda_inbox._report import PENDING, Pending

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from mypy_boto3_sqs import SQSClient

    from lambda_inbox._errors import PoisonMessage
    from lambda_inbox._outcomes import MessageResult
    from lambda_inbox._sources.identity import Delivery
    from lambda_inbox.store import InboxStore


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
        from lambda_inbox._dead_letter.envelope import (
            send_message_request,  # loaded by the first poison message
        )

        return send_message_request(
            self.queue_url, message, message_key=message_key, code=code, error=error
        )


#: What waits while nothing does (never appended to: `defer` makes a list of its own first).
_NONE_WAITING: list[Any] = []
_NO_KEYS: frozenset[str] = frozenset()


class DeadLettering:
    """The dead-letter stage of one batch: DLQ first (nothing lost), then the FAILED record
    (an incident artifact; best effort, the message is already safe), then acknowledge.

    Poison waits (`defer`) until the pipeline `flush`es it, before anything of the batch is
    committed: then it goes out ten `SendMessageBatch` entries a call (within SQS's 256 KiB),
    an entry a call refuses is sent again alone, and the FAILED records of all that was sent are
    written together (`store.failed`): `sending`, loaded by the first poison. So a batch of
    poison costs what a batch of good messages does: one call to SQS and one to DynamoDB per
    ten. `dead_letter` sends one message at once (leased mode). The results go back to the
    pipeline, which records them."""

    def __init__(
        self,
        *,
        queue: DeadLetterQueue | None,
        store: InboxStore,
        deadline: Deadline,
        logger: Logger,
        now: Callable[[], float],
    ) -> None:
        self.queue = queue
        self.store = store
        self.deadline = deadline
        self.log = logger
        self.now = now
        #: Poison waiting for the next `flush`: (delivery, poison, whether to record it FAILED),
        #: and its keys; shared empty ones until there is some (most batches have none).
        self._pending: list[tuple[Delivery, PoisonMessage, bool]] = _NONE_WAITING
        self.pending_keys: set[str] | frozenset[str] = _NO_KEYS

    def defer(
        self, delivery: Delivery, poison: PoisonMessage, *, record_failure: bool = True
    ) -> Pending:
        """Dead-letter `delivery` with the next `flush`; its result comes from there."""
        if not self._pending:
            self._pending, self.pending_keys = [], set()
        self._pending.append((delivery, poison, record_failure))
        cast("set[str]", self.pending_keys).add(delivery.key)  # made above, not the shared one
        return PENDING

    def flush(self) -> Sequence[MessageResult]:
        """Send what waits (the class docstring); each message's result, in order."""
        if not self._pending:  # nearly every batch: no poison
            return ()
        waiting = self._pending
        self._pending, self.pending_keys = _NONE_WAITING, _NO_KEYS
        from lambda_inbox._dead_letter.sending import send_poison

        return send_poison(self, waiting)

    def dead_letter(
        self, delivery: Delivery, poison: PoisonMessage, *, record_failure: bool = True
    ) -> MessageResult:
        """Dead-letter `delivery` now, alone."""
        from lambda_inbox._dead_letter.sending import send_poison

        return send_poison(self, [(delivery, poison, record_failure)])[0]
