"""Replaying dead letters: SQS's own move task, or a client-side mover with filters and a limit.

The client-side mover receives a batch from the source, sends the messages it selects to the
destination (body and message attributes unchanged, `inbox-body-encoding` included), and deletes
them from the source only after the send succeeded. So at any moment, including a kill between
send and delete, every message is in the source or in the destination, possibly in both: a rerun
moves what is left, and a message that arrives twice is a duplicate that the consumer's inbox
acknowledges without effects.

Messages it does not select (and, in a dry run, the ones it lists) stay hidden while the pass
goes on and are made visible again, at once, when it ends: released one by one, SQS would hand
the same messages back and the pass would never reach the others. A kill leaves them hidden
until their visibility timeout runs out. The pass ends when a receive returns nothing, when
`STALE_RECEIVES` receives in a row bring only messages it has already looked at, or at the limit.
On a FIFO source a held message holds back the rest of its message group until the pass ends.

Filters (`--where ATTR=VALUE`) compare message attributes only (string and number types; binary
attributes never match), all of them must match; system attributes are not looked at.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from ..aws import error_code, error_message

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef, SendMessageBatchRequestEntryTypeDef

# Attributes the consumers put on dead letters (docs/operations.md); the wire names, not imports,
# so the command line reads dead letters of any library version.
ERROR_CODE_ATTRIBUTE = "inbox-error-code"
MESSAGE_KEY_ATTRIBUTE = "inbox-message-key"
BODY_ENCODING_ATTRIBUTE = "inbox-body-encoding"
SQS_BATCH = 10
#: What one SendMessageBatch may carry in total (the SQS limit is at least this).
BATCH_BYTES = 256 * 1024
#: Receives in a row that bring only messages already looked at before the mover stops.
STALE_RECEIVES = 3
PREVIEW_CHARS = 80
#: Errors of a whole SendMessageBatch that one entry can cause (each entry is then sent alone).
_ENTRY_ERRORS = frozenset(
    {
        "InvalidParameterValue",
        "InvalidMessageContents",
        "BatchRequestTooLong",
        "AWS.SimpleQueueService.BatchRequestTooLong",
        "MessageTooLong",
        "InvalidParameterCombination",
    }
)


@dataclass(frozen=True)
class Where:
    """`ATTR=VALUE`: the message attribute ATTR has the string value VALUE."""

    attribute: str
    value: str

    @classmethod
    def parse(cls, text: str) -> Where:
        attribute, sep, value = text.partition("=")
        if not sep or not attribute.strip():
            raise ValueError(
                f"--where {text!r}: expected ATTR=VALUE, e.g. --where inbox-error-code=invalid_payload"
            )
        return cls(attribute.strip(), value)

    def matches(self, message: MessageTypeDef) -> bool:
        found = message.get("MessageAttributes", {}).get(self.attribute)
        return found is not None and found.get("StringValue") == self.value


def string_attribute(message: MessageTypeDef, name: str) -> str | None:
    value = message.get("MessageAttributes", {}).get(name)
    return value.get("StringValue") if value is not None else None


@dataclass(frozen=True)
class Preview:
    """What a dry run shows of a message it would move."""

    message_id: str
    error_code: str | None
    message_key: str | None
    body_preview: str

    @classmethod
    def of(cls, message: MessageTypeDef) -> Preview:
        return cls(
            message_id=message["MessageId"],
            error_code=string_attribute(message, ERROR_CODE_ATTRIBUTE),
            message_key=string_attribute(message, MESSAGE_KEY_ATTRIBUTE),
            body_preview=body_preview(message),
        )

    def document(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "inbox-error-code": self.error_code,
            "inbox-message-key": self.message_key,
            "body_preview": self.body_preview,
        }


def body_preview(message: MessageTypeDef, chars: int = PREVIEW_CHARS) -> str:
    """The start of the body on one line; a base64 body (`inbox-body-encoding`) is decoded."""
    body = message.get("Body", "")
    if string_attribute(message, BODY_ENCODING_ATTRIBUTE) == "base64":
        try:
            raw = base64.b64decode(body, validate=True)
        except ValueError:
            pass
        else:
            text = raw.decode("utf-8", errors="replace")
            body = "(base64) " + text
    flat = " ".join(body.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


@dataclass
class MoveReport:
    """Counts of one redrive. `moved` are in the destination and gone from the source, except
    `not_deleted` of them, which a rerun moves again (a duplicate the inbox absorbs)."""

    mode: str
    moved: int = 0
    skipped: int = 0
    failed: int = 0
    not_deleted: int = 0
    interrupted: bool = False
    dry_run: bool = False
    status: str | None = None
    to_move: int | None = None
    would_move: list[Preview] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def handled(self) -> int:
        return self.moved + self.skipped + self.failed + len(self.would_move)

    @property
    def ok(self) -> bool:
        return not self.interrupted and self.failed == 0 and self.status in (None, "COMPLETED")

    def note_error(self, text: str) -> None:
        if len(self.errors) < 10 and text not in self.errors:
            self.errors.append(text)

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "mode": self.mode,
            "dry_run": self.dry_run,
            "moved": self.moved,
            "skipped": self.skipped,
            "failed": self.failed,
            "not_deleted": self.not_deleted,
            "interrupted": self.interrupted,
            "errors": list(self.errors),
        }
        if self.dry_run:
            doc["would_move"] = [preview.document() for preview in self.would_move]
        if self.mode == "native":
            doc["status"] = self.status
            doc["to_move"] = self.to_move
        return doc


class TokenBucket:
    """At most `rate` tokens a second on average, bursts up to max(1, rate)."""

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.capacity = max(1.0, rate)
        self._tokens = self.capacity
        self._clock = clock
        self._sleep = sleep
        self._last = clock()

    def take(self, count: int = 1) -> None:
        """Wait until `count` tokens are there (at most `capacity`), then take them."""
        wanted = min(float(count), self.capacity)
        while True:
            now = self._clock()
            self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
            self._last = now
            if self._tokens >= wanted:
                self._tokens -= wanted
                return
            self._sleep((wanted - self._tokens) / self.rate)


def sendable_attributes(message: MessageTypeDef) -> dict[str, Any]:
    """Received message attributes in the shape SendMessage takes, values unchanged."""
    attributes: dict[str, Any] = {}
    for name, value in message.get("MessageAttributes", {}).items():
        data_type = value["DataType"]
        if data_type.startswith("Binary"):
            attributes[name] = {"DataType": data_type, "BinaryValue": value.get("BinaryValue", b"")}
        else:
            attributes[name] = {"DataType": data_type, "StringValue": value.get("StringValue", "")}
    return attributes


def fifo_fields(message: MessageTypeDef) -> dict[str, str]:
    """MessageGroupId and MessageDeduplicationId for a FIFO destination, from the source message.

    A message without them (from a standard queue) is grouped by its inbox message key and
    deduplicated by its message id, so a copy sent again by a rerun within five minutes is
    dropped by SQS.
    """
    system = message.get("Attributes", {})
    group = (
        system.get("MessageGroupId")
        or string_attribute(message, MESSAGE_KEY_ATTRIBUTE)
        or message["MessageId"]
    )
    dedup = (
        system.get("MessageDeduplicationId")
        or hashlib.sha256(message["MessageId"].encode("utf-8")).hexdigest()
    )
    return {"MessageGroupId": group, "MessageDeduplicationId": dedup}


def _entry_size(entry: Mapping[str, Any]) -> int:
    size = len(str(entry["MessageBody"]).encode("utf-8"))
    for name, value in entry.get("MessageAttributes", {}).items():
        size += len(name.encode("utf-8")) + len(str(value["DataType"]).encode("utf-8"))
        if "BinaryValue" in value:
            size += len(value["BinaryValue"])
        else:
            size += len(str(value["StringValue"]).encode("utf-8"))
    return size


def batches_by_size(
    entries: Sequence[dict[str, Any]], limit: int = BATCH_BYTES
) -> Iterator[list[dict[str, Any]]]:
    """Entries in send batches of at most 10 and at most `limit` bytes (a larger one alone)."""
    batch: list[dict[str, Any]] = []
    size = 0
    for entry in entries:
        entry_size = _entry_size(entry)
        if batch and (len(batch) == SQS_BATCH or size + entry_size > limit):
            yield batch
            batch, size = [], 0
        batch.append(entry)
        size += entry_size
    if batch:
        yield batch


ProgressCallback = Callable[[MoveReport], None]


class Mover:
    """The client-side mover (see the module's docstring)."""

    def __init__(
        self,
        sqs: SQSClient,
        source_url: str,
        destination_url: str,
        *,
        where: Iterable[Where] = (),
        limit: int | None = None,
        rate: float | None = None,
        dry_run: bool = False,
        visibility_timeout: int = 60,
        wait_seconds: int = 1,
        on_progress: ProgressCallback | None = None,
        sleep: Callable[[float], None] = time.sleep,
        stop: threading.Event | None = None,
    ) -> None:
        self._sqs = sqs
        #: Set (by a signal handler) to stop at the next safe point: between SQS calls, so no
        #: received message is left hidden without the mover knowing its receipt handle.
        self._stop = stop or threading.Event()
        self.source_url = source_url
        self.destination_url = destination_url
        self._where = tuple(where)
        self._limit = limit
        self._rate = rate
        self._bucket = TokenBucket(rate, sleep=sleep) if rate else None
        self._dry_run = dry_run
        self._visibility = visibility_timeout
        self._wait = wait_seconds
        self.on_progress = on_progress or (lambda report: None)
        self._fifo_destination = destination_url.rstrip("/").endswith(".fifo")
        self.report = MoveReport(mode="client", dry_run=dry_run)
        # Received and not yet sent; sent and not yet deleted; skipped or only listed, hidden
        # until the pass ends (what an interrupt settles).
        self._unsent: dict[str, MessageTypeDef] = {}
        self._held: dict[str, MessageTypeDef] = {}
        self._undeleted: dict[str, MessageTypeDef] = {}

    def run(self) -> MoveReport:
        seen: set[str] = set()
        stale = 0
        try:
            while (size := self._batch_size()) > 0:
                if self._stop.is_set():
                    raise KeyboardInterrupt
                batch = self._receive(size)
                if self._stop.is_set():
                    self._hold(batch)
                    raise KeyboardInterrupt
                if not batch:
                    break
                fresh = [message for message in batch if message["MessageId"] not in seen]
                for message in batch:
                    if message["MessageId"] in seen:  # held, came back: hide it again
                        self._held[message["MessageId"]] = message
                if not fresh:
                    stale += 1
                    if stale >= STALE_RECEIVES:
                        break
                    continue
                stale = 0
                seen.update(message["MessageId"] for message in fresh)
                chosen = [m for m in fresh if all(where.matches(m) for where in self._where)]
                chosen_ids = {message["MessageId"] for message in chosen}
                others = [m for m in fresh if m["MessageId"] not in chosen_ids]
                self._hold(others)
                self.report.skipped += len(others)
                if self._dry_run:
                    self.report.would_move.extend(Preview.of(message) for message in chosen)
                    self._hold(chosen)
                elif chosen:
                    self._move(chosen)
                self.on_progress(self.report)
        except KeyboardInterrupt:
            self.report.interrupted = True
            self._settle()
        except Exception:
            with contextlib.suppress(Exception):
                self._settle()
            raise
        self._release(list(self._held.values()))
        self._held = {}
        return self.report

    def _hold(self, messages: Iterable[MessageTypeDef]) -> None:
        """Keep messages hidden until the pass ends (the receive hid them), then release them.

        Made visible one by one, SQS would hand the same messages back and the pass would never
        reach the others.
        """
        for message in messages:
            self._held[message["MessageId"]] = message

    def _moved_or_listed(self) -> int:
        return len(self.report.would_move) if self._dry_run else self.report.moved

    def _batch_size(self) -> int:
        size = SQS_BATCH
        if self._limit is not None:
            size = min(size, self._limit - self._moved_or_listed())
        if self._rate is not None and not self._dry_run:
            size = min(size, max(1, int(self._rate)))
        return max(size, 0)

    def _receive(self, size: int) -> list[MessageTypeDef]:
        response = self._sqs.receive_message(
            QueueUrl=self.source_url,
            MaxNumberOfMessages=size,
            MessageAttributeNames=["All"],
            AttributeNames=["All"],
            WaitTimeSeconds=self._wait,
            VisibilityTimeout=self._visibility,
        )
        return list(response.get("Messages", []))

    def _release(self, messages: Sequence[MessageTypeDef]) -> None:
        """Make messages visible again at once (best effort: else after the visibility timeout)."""
        for start in range(0, len(messages), SQS_BATCH):
            chunk = messages[start : start + SQS_BATCH]
            try:
                self._sqs.change_message_visibility_batch(
                    QueueUrl=self.source_url,
                    Entries=[
                        {
                            "Id": str(index),
                            "ReceiptHandle": message["ReceiptHandle"],
                            "VisibilityTimeout": 0,
                        }
                        for index, message in enumerate(chunk)
                    ],
                )
            except ClientError as error:
                self.report.note_error(
                    f"could not make messages visible again ({error_code(error)}); they return "
                    f"after the visibility timeout ({self._visibility} s)"
                )

    def _entry(self, index: int, message: MessageTypeDef) -> dict[str, Any]:
        entry: dict[str, Any] = {"Id": str(index), "MessageBody": message["Body"]}
        attributes = sendable_attributes(message)
        if attributes:
            entry["MessageAttributes"] = attributes
        trace = message.get("Attributes", {}).get("AWSTraceHeader")
        if trace:
            entry["MessageSystemAttributes"] = {
                "AWSTraceHeader": {"DataType": "String", "StringValue": trace}
            }
        if self._fifo_destination:
            entry.update(fifo_fields(message))
        return entry

    def _move(self, messages: list[MessageTypeDef]) -> None:
        self._unsent = {message["MessageId"]: message for message in messages}
        if self._bucket is not None:
            self._bucket.take(len(messages))
        entries = [self._entry(index, message) for index, message in enumerate(messages)]
        for batch in batches_by_size(entries):
            sent, refused = self._send(batch)
            for entry_id in sent:
                message = messages[int(entry_id)]
                self._unsent.pop(message["MessageId"], None)
                self._undeleted[message["MessageId"]] = message
                self.report.moved += 1
            for entry_id, reason in refused:
                message = messages[int(entry_id)]
                self._unsent.pop(message["MessageId"], None)
                self.report.note_error(f"send refused: {reason}")
                self.report.failed += 1
                self._hold([message])  # visible again when the pass ends; a rerun tries again
        self._delete_sent()

    def _send(self, batch: list[dict[str, Any]]) -> tuple[list[str], list[tuple[str, str]]]:
        """Send a batch: ids of the entries sent, (id, reason) of those refused.

        When SQS refuses the whole batch for one entry's sake (too large, invalid), each
        entry is sent alone so that one bad message does not hold back the others.
        """
        try:
            response = self._sqs.send_message_batch(
                QueueUrl=self.destination_url,
                Entries=cast("list[SendMessageBatchRequestEntryTypeDef]", batch),
            )
        except ClientError as error:
            if error_code(error) not in _ENTRY_ERRORS:
                raise
            return self._send_each(batch)
        sent = [done["Id"] for done in response.get("Successful", [])]
        refused = [
            (failed["Id"], f"{failed.get('Code', '?')}: {failed.get('Message', '')}")
            for failed in response.get("Failed", [])
        ]
        return sent, refused

    def _send_each(self, batch: list[dict[str, Any]]) -> tuple[list[str], list[tuple[str, str]]]:
        sent: list[str] = []
        refused: list[tuple[str, str]] = []
        for entry in batch:
            request = {key: value for key, value in entry.items() if key != "Id"}
            try:
                self._sqs.send_message(QueueUrl=self.destination_url, **request)
            except ClientError as error:
                if error_code(error) not in _ENTRY_ERRORS:
                    raise
                refused.append((entry["Id"], f"{error_code(error)}: {error_message(error)}"))
            else:
                sent.append(entry["Id"])
        return sent, refused

    def _delete_sent(self) -> None:
        sent = list(self._undeleted.values())
        for start in range(0, len(sent), SQS_BATCH):
            chunk = sent[start : start + SQS_BATCH]
            try:
                response = self._sqs.delete_message_batch(
                    QueueUrl=self.source_url,
                    Entries=[
                        {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
                        for index, message in enumerate(chunk)
                    ],
                )
                failures = response.get("Failed", [])
            except ClientError as error:
                failures = [
                    {
                        "Id": str(index),
                        "SenderFault": False,
                        "Code": error_code(error),
                        "Message": error_message(error),
                    }
                    for index in range(len(chunk))
                ]
            for failed in failures:
                self.report.not_deleted += 1
                self.report.note_error(
                    f"sent but not deleted from the source ({failed.get('Code', '?')}): a rerun "
                    "sends it again, which the inbox absorbs as a duplicate"
                )
            for message in chunk:
                self._undeleted.pop(message["MessageId"], None)

    def _settle(self) -> None:
        """After an interrupt: unsent and held messages visible again, sent ones deleted."""
        unsent = [*self._unsent.values(), *self._held.values()]
        self._unsent, self._held = {}, {}
        self._release(unsent)
        self._delete_sent()
