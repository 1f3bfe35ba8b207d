"""The event sources of tests/unit/fates/test_batch_semantics.py: what a producer puts on each source,
the events Lambda builds from it (with the testing kit's builders), and what Lambda delivers
next after a response, a crash or an at-least-once repeat.

- SQS standard: any pending messages, in any order; a reported or crashed message comes back
  with its receive count raised; an acknowledged one may come back too (at least once).
- SQS FIFO (`fifo_failure_mode="stop"`): pending messages in the order they were sent; the
  deduplication id is the content's, so a producer's resend keeps it.
- Kafka: two partitions of one topic, a message's partition chosen by its id; each batch goes on
  from the partition's checkpoint, which moves to the first reported offset (or past the batch);
  a rebalance rewinds it.
- Kinesis and DynamoDB Streams: one shard, the same checkpoint rules (the response names the
  first record to retry).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lambda_inbox_tools.testing.events import (
    FIFO_QUEUE_ARN,
    kafka_event,
    kafka_record,
    sqs_event,
    sqs_record,
)
from lambda_inbox_tools.testing.stream_events import (
    DYNAMODB_STREAM_ARN,
    KINESIS_STREAM_ARN,
    dynamodb_stream_event,
    dynamodb_stream_record,
    kinesis_event,
    kinesis_record,
    sequence_number,
)
from tests.outcome_model import Body, Raises, Source

#: The principal the kit's SQS records name as their sender (`attributes.SenderId`).
SENDER = "AIDAEXAMPLEPRODUCER01"
TOPIC = "payments"
SHARD = "shardId-000000000000"
#: A number one digit past Python's integer-string limit, and nesting past the JSON reader's.
LONG_NUMBER = "9" * 4301
DEEP = 20_000  # past the reader's on every supported Python (3.13 reads 3,000)


@dataclass(frozen=True)
class Message:
    """What a producer sent: the same `Message` sent twice is a resend."""

    source: Source
    id: str
    version: int
    body: Body
    raises: Raises | None = None

    def document(self) -> dict[str, Any]:
        """The payload the callbacks read (its `raise` marker names the callback that raises)."""
        document: dict[str, Any] = {"id": self.id, "v": self.version, "kind": self.body.value}
        if self.body is Body.POISON:
            document["v"] = f"version {self.version}"  # the model wants a number
        if self.raises is not None:
            document["raise"] = [self.raises.callback, self.raises.kinds[0]]
        return document

    def data(self) -> bytes:
        """The body's bytes on SQS, Kafka and Kinesis."""
        text = json.dumps(self.document(), separators=(",", ":"))
        if self.body is Body.UNDECODABLE:
            binary = self.source in (Source.KAFKA, Source.KINESIS)
            return (b"\xff\xfe" if binary else b"not json: ") + text.encode()
        if self.body is Body.HOSTILE:
            if self.version % 2:  # a number past Python's integer-string limit
                return text[:-1].encode() + b',"n":' + LONG_NUMBER.encode() + b"}"
            return text[:-1].encode() + b',"n":' + b"[" * DEEP + b"]" * DEEP + b"}"
        return text.encode()

    def armed_in(self, armed: frozenset[tuple[str, int]]) -> bool:
        """Whether its marked callback raises, when `armed` are the payloads armed."""
        return self.raises is not None and (self.id, self.version) in armed

    @property
    def token(self) -> str:
        """Stands for the fingerprint: equal exactly when the payloads are."""
        return repr((self.source, self.id, self.version, self.body, self.raises))


@dataclass
class Copy:
    """One message under one delivery id (what the source delivers, possibly again)."""

    message: Message
    delivery_id: str
    position: int  # offset or sequence number; the order sent on SQS
    receives: int = 0
    scope: str | None = None


@dataclass
class Feed:
    """One source: what is pending, how a batch is taken, and what follows its response."""

    source: Source
    sent: int = 0
    #: SQS: the copies pending (in order); ordered sources: their logs, by scope.
    pending: list[Copy] = field(default_factory=list)
    acknowledged: list[Copy] = field(default_factory=list)
    logs: dict[str, list[Copy]] = field(default_factory=dict)
    checkpoints: dict[str, int] = field(default_factory=dict)

    @property
    def ordered_log(self) -> bool:
        return self.source in (Source.KAFKA, Source.KINESIS, Source.DYNAMODB)

    def publish(self, message: Message) -> Copy:
        self.sent += 1
        scope = self._scope(message)
        if self.ordered_log:
            log = self.logs.setdefault(str(scope), [])
            self.checkpoints.setdefault(str(scope), 0)
            copy = Copy(message, "", len(log), scope=scope)
            copy.delivery_id = self._delivery_id(copy)
            log.append(copy)
        else:
            copy = Copy(message, f"{self.source.name.lower()}-m{self.sent}", self.sent, scope=scope)
            self.pending.append(copy)
        return copy

    def _scope(self, message: Message) -> str | None:
        if self.source is Source.FIFO:
            return FIFO_QUEUE_ARN
        if self.source is Source.KAFKA:
            return f"{TOPIC}-{int(message.id.rsplit('-', 1)[1]) % 2}"
        if self.source is Source.KINESIS:
            return f"{KINESIS_STREAM_ARN}#{SHARD}"
        if self.source is Source.DYNAMODB:
            return DYNAMODB_STREAM_ARN
        return None

    def _delivery_id(self, copy: Copy) -> str:
        if self.source is Source.KAFKA:
            return f"{copy.scope}-{copy.position}"
        if self.source is Source.KINESIS:
            return f"{SHARD}:{sequence_number(copy.position)}"
        return f"{copy.position:032x}"  # DynamoDB Streams: the builder's eventID

    def has_pending(self) -> bool:
        if self.ordered_log:
            return any(self.checkpoints[s] < len(log) for s, log in self.logs.items())
        return bool(self.pending)

    def take(self, size: int, start: int = 0) -> list[Copy]:
        """The next batch, in the order the consumer numbers its records."""
        if self.ordered_log:
            batch = []
            for scope in sorted(self.logs):
                first = self.checkpoints[scope]
                batch.extend(self.logs[scope][first : first + size])
            return batch
        if self.source is Source.FIFO:
            return self.pending[:size]
        start %= max(1, len(self.pending))
        return (self.pending[start:] + self.pending[:start])[:size]

    def answer(self, batch: list[Copy], reported: list[int] | None) -> None:
        """What the source does after the response (`reported`: the indexes the response
        names; None: the invocation crashed and the whole batch comes back)."""
        for copy in batch:
            copy.receives += 1
        if self.ordered_log:
            if reported is None:
                return
            for scope in {copy.scope for copy in batch}:
                indexes = [i for i, copy in enumerate(batch) if copy.scope == scope]
                failed = [i for i in indexes if i in reported]
                resume = batch[failed[0]] if failed else None
                self.checkpoints[str(scope)] = (
                    resume.position if resume is not None else batch[indexes[-1]].position + 1
                )
            return
        done = [] if reported is None else [c for i, c in enumerate(batch) if i not in reported]
        self.pending = [copy for copy in self.pending if copy not in done]
        self.acknowledged.extend(done)

    def deliver_again(self, pick: int) -> None:
        """At least once: an acknowledged message comes back (SQS), or a rebalance or a retry
        rewinds a partition or shard."""
        if self.ordered_log:
            scope = sorted(self.logs)[pick % len(self.logs)] if self.logs else None
            if scope is not None:
                self.checkpoints[scope] = max(0, self.checkpoints[scope] - 1 - pick % 3)
        elif self.acknowledged:
            copy = self.acknowledged.pop(pick % len(self.acknowledged))
            self.pending.append(copy)

    # ---- events ------------------------------------------------------------------------------

    def event(self, batch: list[Copy]) -> dict[str, Any]:
        if self.source in (Source.SQS, Source.FIFO):
            return sqs_event(*(self._sqs_record(copy) for copy in batch))
        if self.source is Source.KAFKA:
            return kafka_event(
                kafka_record(int(str(c.scope).rsplit("-", 1)[1]), c.position, c.message.data())
                for c in batch
            )
        if self.source is Source.KINESIS:
            return kinesis_event(
                kinesis_record(c.position, c.message.data(), partition_key=c.message.id)
                for c in batch
            )
        return dynamodb_stream_event(self.stream_record(copy) for copy in batch)

    def _sqs_record(self, copy: Copy) -> dict[str, Any]:
        text = copy.message.data().decode()
        if self.source is Source.FIFO:
            message = copy.message
            return sqs_record(
                text,
                message_id=copy.delivery_id,
                group=f"g{int(message.id.rsplit('-', 1)[1]) % 2}",
                dedup=f"{message.id}-v{message.version}-{message.body.value}",
                receive_count=copy.receives + 1,
            )
        return sqs_record(text, message_id=copy.delivery_id, receive_count=copy.receives + 1)

    @staticmethod
    def stream_record(copy: Copy) -> dict[str, Any]:
        message = copy.message
        image = message.document()
        record = dynamodb_stream_record(copy.position, {"id": message.id}, new_image=image)
        if message.body is Body.UNDECODABLE:
            record["dynamodb"]["NewImage"]["v"] = {"BOOL": "false"}
        elif message.body is Body.HOSTILE:
            record["dynamodb"]["NewImage"]["v"] = {"N": "1" * 39}
        return record

    def unkeyed_key(self, copy: Copy) -> str:
        """The key of a consumer without `key=`: the FIFO deduplication id, else the delivery
        id (on SQS, in the sender's name space)."""
        if self.source is Source.FIFO:
            message = copy.message
            return f"{SENDER}/{message.id}-v{message.version}-{message.body.value}"
        return self.fallback_key(copy)

    def fallback_key(self, copy: Copy) -> str:
        """The key of a message whose own key cannot be read: its delivery id (on SQS, in the
        sender's name space: docs/concepts.md, "Message identity")."""
        if self.source in (Source.SQS, Source.FIFO):
            return f"{SENDER}/{copy.delivery_id}"
        return copy.delivery_id

    def original(self, copy: Copy) -> Any:
        """What a dead letter of `copy` must give back (a stream record: its JSON, parsed)."""
        if self.source is Source.DYNAMODB:
            return self.stream_record(copy)
        return copy.message.data()


def dead_letter_body(source: Source, body: bytes) -> Any:
    """A dead letter's original body as `Feed.original` gives it."""
    return json.loads(body) if source is Source.DYNAMODB else body
