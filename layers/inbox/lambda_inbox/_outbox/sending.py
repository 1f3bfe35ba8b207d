"""Sending outbox messages to one destination: the batches a kind allows, and the retries.

Each destination kind (`sqs`, `sns`, `eventbridge`: one module each) is a `Sender`: its batch
limits, the size it counts for a message, what it can never send, and one batch call that
answers with the entries it refused. `chunks` cuts messages into batches within the limits;
`deliver` sends one batch under the invocation's deadline and sends its transient refusals
again (throttling, internal errors, a call that failed whole) after a jittered backoff
(`RetryPolicy`), while attempts and time are left. What is still refused is returned with its
reason, for the relay to report its stream record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from lambda_inbox._dead_letter.batches import chunks
from lambda_inbox._errors import DeadlineReached
from lambda_inbox._internal import RetryPolicy
from lambda_inbox._internal.deadline import Deadline
from lambda_inbox._outbox.destinations import Destination
from lambda_inbox._sources.identity import OUTBOX_MESSAGE_ID_ATTRIBUTE
from lambda_inbox.store._outbox_item import OutboxMessage

__all__ = ["MESSAGE_ID_ATTRIBUTE", "Delivered", "Refusal", "Sender", "chunks", "deliver"]

#: The message attribute (SQS, SNS) that carries the outbox message id to the receiver.
MESSAGE_ID_ATTRIBUTE = OUTBOX_MESSAGE_ID_ATTRIBUTE
#: Error codes of a whole call worth sending again: throttling and the service's own faults.
TRANSIENT_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "TooManyRequestsException",
        "KMSThrottlingException",
        "InternalError",
        "InternalFailure",
        "InternalErrorException",
        "ServiceUnavailable",
    }
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """One entry of a batch call the destination did not take."""

    entry_id: str
    code: str
    reason: str
    #: Worth sending again in this invocation (throttling, the service's fault).
    retryable: bool


class Sender(Protocol):
    """One destination kind, bound to one target and its client."""

    @property
    def destination(self) -> Destination: ...

    @property
    def max_entries(self) -> int:
        """Most entries one call takes."""
        ...

    @property
    def max_bytes(self) -> int:
        """Most bytes (`size`) one call takes."""
        ...

    def size(self, message: OutboxMessage) -> int:
        """The bytes the service counts for `message` against `max_bytes`."""
        ...

    def problem(self, message: OutboxMessage) -> str | None:
        """Why `message` can never be sent here (None: it can)."""
        ...

    def send(self, batch: Sequence[tuple[str, OutboxMessage]]) -> list[Refusal]:
        """One batch call, entry ids given; the entries refused. Raises the client's errors
        for a call that failed whole."""
        ...


@dataclass(slots=True)
class Delivered:
    """What became of a batch: the positions refused for good, with the reason, and how many
    entries were sent again."""

    failed: dict[int, str] = field(default_factory=dict)
    retried: int = 0


def deliver(
    sender: Sender,
    messages: Sequence[OutboxMessage],
    deadline: Deadline,
    retry: RetryPolicy,
    logger: Logger,
) -> Delivered:
    """Send one batch (see the module); the result names positions in `messages`."""
    outcome = Delivered()
    pending = list(range(len(messages)))
    for attempt in range(1, retry.max_attempts + 1):
        refusals = _attempt(sender, [(str(i), messages[i]) for i in pending], deadline)
        again: list[int] = []
        for refusal in refusals:
            position = int(refusal.entry_id)
            logger.warning(
                "outbox message refused",
                destination=sender.destination.target,
                message_id=messages[position].message_id,
                code=refusal.code,
                error=refusal.reason,
                retryable=refusal.retryable,
                attempt=attempt,
            )
            if refusal.retryable:
                again.append(position)
            else:
                outcome.failed[position] = f"{refusal.code}: {refusal.reason}"
        if not again:
            break
        if attempt == retry.max_attempts or not deadline.sleep(retry.backoff(attempt)):
            outcome.failed.update((p, "still refused: no attempt or time left") for p in again)
            break
        outcome.retried += len(again)
        pending = again
    return outcome


def _attempt(
    sender: Sender, batch: list[tuple[str, OutboxMessage]], deadline: Deadline
) -> list[Refusal]:
    try:
        return deadline.run(sender.send, batch)
    except DeadlineReached as error:
        return [Refusal(i, "DeadlineReached", str(error), False) for i, _ in batch]
    except ClientError as error:
        details = error.response.get("Error", {})
        code = str(details.get("Code", "ClientError"))
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        transient = code in TRANSIENT_CODES or status >= 500
        return [Refusal(i, code, str(error), transient) for i, _ in batch]
    except BotoCoreError as error:  # connection errors, after the client's own attempts
        return [Refusal(i, type(error).__name__, str(error), True) for i, _ in batch]


def string_attributes(message: OutboxMessage) -> dict[str, dict[str, str]]:
    """The message attributes of SQS and SNS: the item's, and its id as `outbox-message-id`."""
    attributes = {
        name: {"DataType": "String", "StringValue": value}
        for name, value in message.attributes.items()
    }
    attributes[MESSAGE_ID_ATTRIBUTE] = {"DataType": "String", "StringValue": message.message_id}
    return attributes


def attributed_size(message: OutboxMessage) -> int:
    """SQS's and SNS's size of a message: its body, and each attribute's name, type and value
    (UTF-8 bytes)."""
    size = len(message.body.encode("utf-8"))
    for name, value in string_attributes(message).items():
        size += len(name.encode("utf-8")) + len("String") + len(value["StringValue"].encode())
    return size


def fifo_ids(message: OutboxMessage) -> dict[str, str]:
    """A FIFO queue's or topic's ids of a message: its group (the message id unless the item
    names one) and its id as the deduplication id."""
    return {
        "MessageGroupId": message.group_id or message.message_id,
        "MessageDeduplicationId": message.message_id,
    }


def batch_refusals(answer: Mapping[str, Any]) -> list[Refusal]:
    """The entries a `SendMessageBatch` or `PublishBatch` answer lists as `Failed` (the same
    shape): each retryable unless the fault is the sender's."""
    return [
        Refusal(
            str(failed["Id"]),
            str(failed.get("Code", "")),
            str(failed.get("Message", "")),
            not failed.get("SenderFault", False),
        )
        for failed in answer.get("Failed", [])
    ]
