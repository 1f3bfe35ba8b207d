"""The client-side mover: dead letters moved from a source queue to a destination, with filters,
a limit, a rate and a dry run.

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

The messages it moves are those every `--where` filter (`where.py`) matches.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..aws import error_code, error_message
from .dead_letters import Preview
from .entries import SQS_BATCH, batches_by_size, fifo_fields, sendable_attributes
from .rate import TokenBucket
from .report import MoveReport, ProgressCallback
from .sending import send_batch
from .where import Where

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

#: Receives in a row that bring only messages already looked at before the mover stops.
STALE_RECEIVES = 3


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
            sent, refused = send_batch(self._sqs, self.destination_url, batch)
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
