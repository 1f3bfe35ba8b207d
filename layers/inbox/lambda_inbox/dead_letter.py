"""Dead-letter: poison goes to an SQS queue with its original body and attributes.

`DeadLettering` is the stage (DLQ first, then the FAILED inbox record, then acknowledge);
`DeadLetterQueue` is the SQS transport.

Added attributes say why: `inbox-error-code`, `inbox-error`, `inbox-message-key`. SQS allows 10
attributes per message; originals beyond what fits are folded, not dropped, into one
`inbox-original-attributes` JSON attribute. A body that SQS cannot carry as text (binary Kafka
values) is sent base64-encoded with `inbox-body-encoding=base64`, which the SQS adapter decodes
again on replay.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .deadline import Deadline
from .decision import short_error
from .errors import ErrorCode, PoisonMessage
from .identity import MESSAGE_KEY_ATTRIBUTE, Delivery
from .messages import AttributeValue, InboundMessage
from .outcomes import Outcome
from .sqs import BODY_ENCODING_ATTRIBUTE

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from mypy_boto3_sqs import SQSClient

    from .report import BatchReport
    from .store import InboxStore

MAX_ATTRIBUTES = 10
DEADLINE_DETAIL = "no time left before the Lambda deadline; reported for redelivery"
MAX_ERROR_CHARS = 1000
FOLDED_ATTRIBUTE = "inbox-original-attributes"
# Characters SQS accepts in a message body (anything else is rejected by SendMessage). Compiled
# on first use by `re`'s cache: most invocations never dead-letter anything.
_INVALID_SQS_TEXT = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


class DeadLetterQueue:
    """Sends poison messages to one SQS queue (standard or FIFO).

    `client` may be a factory: the SQS client is then built on the first poison message, not at
    cold start (most invocations never dead-letter anything).
    """

    def __init__(self, client: SQSClient | Callable[[], SQSClient], queue_url: str) -> None:
        self._client_or_factory = client
        self.queue_url = queue_url

    @cached_property
    def _client(self) -> SQSClient:
        if callable(self._client_or_factory) and not hasattr(
            self._client_or_factory, "send_message"
        ):
            return self._client_or_factory()
        return self._client_or_factory  # type: ignore[return-value]

    def send(self, message: InboundMessage, *, message_key: str, code: str, error: str) -> str:
        """Dead-letter `message`; returns the new SQS message id. Raises on failure."""
        body, encoding = _sqs_body(message.body)
        added: dict[str, AttributeValue] = {
            "inbox-error-code": _string(code),
            "inbox-error": _string(error[:MAX_ERROR_CHARS] or code),
            MESSAGE_KEY_ATTRIBUTE: _string(message_key),
        }
        if encoding:
            added[BODY_ENCODING_ATTRIBUTE] = _string(encoding)
        originals = {
            name: value
            for name, value in message.dead_letter_attributes.items()
            if name not in added and name != BODY_ENCODING_ATTRIBUTE
        }
        request: dict[str, Any] = {
            "QueueUrl": self.queue_url,
            "MessageBody": body,
            "MessageAttributes": {**_fit(originals, MAX_ATTRIBUTES - len(added)), **added},
        }
        if self.queue_url.endswith(".fifo"):
            request["MessageGroupId"] = message.message_group_id or message_key
            request["MessageDeduplicationId"] = hashlib.sha256(
                message.delivery_id.encode("utf-8")
            ).hexdigest()
        return self._client.send_message(**request)["MessageId"]


def _sqs_body(body: bytes) -> tuple[str, str | None]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and text and is_sqs_text(text):
        return text, None
    return base64.b64encode(body).decode("ascii"), "base64"


def is_sqs_text(text: str) -> bool:
    """True when SQS accepts `text` as a message body or String attribute value."""
    return re.search(_INVALID_SQS_TEXT, text) is None


def _fit(originals: dict[str, AttributeValue], room: int) -> dict[str, AttributeValue]:
    if len(originals) <= room:
        return originals
    names = list(originals)
    kept = {name: originals[name] for name in names[: room - 1]}
    folded = {
        name: originals[name].get("StringValue")
        or base64.b64encode(originals[name].get("BinaryValue", b"")).decode("ascii")
        for name in names[room - 1 :]
    }
    kept[FOLDED_ATTRIBUTE] = _string(json.dumps(folded, sort_keys=True))
    return kept


def _string(value: str) -> AttributeValue:
    return {"DataType": "String", "StringValue": value}


class DeadLettering:
    """The dead-letter stage of one batch: DLQ first (nothing lost), then the FAILED record
    (an incident artifact; best effort, the message is already safe), then acknowledge."""

    def __init__(
        self,
        *,
        queue: DeadLetterQueue | None,
        store: InboxStore,
        report: BatchReport,
        deadline: Deadline,
        logger: Logger,
        now: Callable[[], float],
    ) -> None:
        self._queue = queue
        self._store = store
        self._report = report
        self._deadline = deadline
        self._log = logger
        self._now = now

    def dead_letter(
        self, delivery: Delivery, poison: PoisonMessage, *, record_failure: bool = True
    ) -> None:
        code, reason = poison.code, poison.reason
        if self._deadline.expired():  # a poison storm must not run the invocation into its timeout
            self._report.record(delivery, Outcome.FAILED, ErrorCode.DEADLINE, DEADLINE_DETAIL)
            return
        if self._queue is None:
            detail = f"{reason} (no dead-letter queue configured: set DEAD_LETTER_QUEUE_URL)"
            self._report.record(delivery, Outcome.FAILED, code, detail)
            return
        try:
            self._queue.send(delivery.message, message_key=delivery.key, code=code, error=reason)
        except Exception as error:
            self._log.error(
                "dead-lettering failed; the record is reported for redelivery",
                extra={"message_key": delivery.key, "error": short_error(error)},
            )
            self._report.record(
                delivery, Outcome.FAILED, ErrorCode.DEAD_LETTER_FAILED, short_error(error)
            )
            return
        if record_failure:
            self._mark_failed(delivery, code, reason)
        self._report.record(delivery, Outcome.DEAD_LETTERED, code, reason)

    def _mark_failed(self, delivery: Delivery, code: str, reason: str) -> None:
        try:
            self._store.mark_failed(
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
