"""A reference model of what happens to each record of a batch, written from docs/concepts.md
("Every record's fate") and docs/errors.md, in plain Python: no AWS, nothing of the library.

Given the inbox records stored before a batch and the batch's deliveries (each with its key,
fingerprint, kind of body, ordering scope, and the callback that raises for it, if any),
`run_batch` returns each record's fate (the rule of the docs' table that decides it, its outcome
and code), the inbox records after the batch, the dead letters and the domain effects.
`ReadFirst` decides, as documented, whether a batch reads its inbox keys before committing.

The model knows a consumer in transactional mode with a dead-letter queue whose decision writes
one commuting `ADD` to the item a message names (`valid`), or checks a condition that fails on
that item's gate (`rejected`: the alternative writes are one commuting `ADD` to its rejections,
or, without `on_condition_failed`, nothing: dead-lettered). tests/unit/fates/test_batch_semantics.py
plays it against the real pipeline; tests/unit/fates/test_outcome_table.py reads the docs' table and
compares it with `RULES`, line by line.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

COMPLETED, FAILED = "COMPLETED", "FAILED"


class Source(Enum):
    SQS = "SQS standard"
    FIFO = "SQS FIFO"
    KAFKA = "Kafka"
    KINESIS = "Kinesis"
    DYNAMODB = "DynamoDB Streams"


class Body(Enum):
    VALID = "valid"
    REJECTED = "rejected"  # a domain condition fails
    POISON = "poison"  # the model refuses it
    UNDECODABLE = "undecodable"  # not UTF-8, not JSON, not DynamoDB JSON
    HOSTILE = "hostile"  # a number of 4,301 digits, nesting too deep, 39 digits in a stream image


UNREADABLE = (Body.UNDECODABLE, Body.HOSTILE)


@dataclass(frozen=True)
class Rule:
    """One line of the docs' table: the name, the step that applies it, and what follows."""

    name: str
    step: str
    outcome: str
    code: str
    reported: str
    record_after: str
    dead_letter: str


NONE = "-"
RULES = (
    Rule("blocked", "any", "skipped", NONE, "yes", "unchanged", NONE),
    Rule("dead-letter-failed", "any", "failed", "dead_letter_failed", "yes", "unchanged", NONE),
    Rule(
        "no-key",
        "identify",
        "dead_lettered",
        "undecodable_body, malformed_json, missing_key",
        "no",
        "FAILED, under the delivery id",
        "its body",
    ),
    Rule("leader-failed", "triage", "failed", "leader_failed", "yes", "unchanged", NONE),
    Rule("dead-lettered-before", "triage", "duplicate", NONE, "no", "unchanged", NONE),
    Rule("duplicate", "triage or commit", "duplicate", NONE, "no", "unchanged", NONE),
    Rule(
        "conflict",
        "triage or commit",
        "dead_lettered",
        "fingerprint_mismatch",
        "no",
        "unchanged",
        "its body",
    ),
    Rule("fix-after-dead-letter", "triage", "failed", "leader_failed", "yes", "unchanged", NONE),
    Rule(
        "unreadable",
        "decide",
        "dead_lettered",
        "undecodable_body, malformed_json",
        "no",
        "FAILED",
        "its body",
    ),
    Rule("refused", "decide", "dead_lettered", "invalid_payload", "no", "FAILED", "its body"),
    Rule(
        "poison-raised",
        "decide",
        "dead_lettered",
        "rejected_by_handler",
        "no",
        "FAILED",
        "its body",
    ),
    Rule("invalid-writes", "decide", "dead_lettered", "invalid_writes", "no", "FAILED", "its body"),
    Rule("handler-error", "decide", "failed", "handler_error", "yes", "unchanged", NONE),
    Rule("transient", "commit", "failed", "retries_exhausted", "yes", "unchanged", NONE),
    Rule("rejected", "commit", "business_outcome", NONE, "no", "COMPLETED", NONE),
    Rule(
        "condition-failed",
        "commit",
        "dead_lettered",
        "condition_failed",
        "no",
        "FAILED",
        "its body",
    ),
    Rule("applied", "commit", "committed", NONE, "no", "COMPLETED", NONE),
)
RULE = {rule.name: rule for rule in RULES}
#: What a model raises when it refuses a payload (docs/errors.md, `invalid_payload`).
MODEL_REFUSALS = frozenset(
    {
        "ValueError",
        "TypeError",
        "LookupError",
        "AttributeError",
        "ArithmeticError",
        "RecursionError",
    }
)


@dataclass(frozen=True)
class Raises:
    """A callback raising for a record: `callback` is "key", "model" or "decide"; `kinds` the
    names of the exception's class and of its bases (`("OverflowError", "ArithmeticError",
    ...)`)."""

    callback: str
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class Delivery:
    key: str  # the message key, when it can be read
    delivery_id: str  # the key when it cannot
    fingerprint: str
    body: Body
    item: str  # the domain item the payload names
    scope: str | None = None  # FIFO queue, Kafka partition or shard; None on a standard queue
    raises: Raises | None = None


@dataclass(frozen=True)
class Consumer:
    key_from_body: bool  # `key=` given: the key is read while identifying
    alternative: bool = True  # `on_condition_failed` given


@dataclass(frozen=True)
class Faults:
    """What fails for a whole batch: every attempt of every transaction (throttled), every
    send to the dead-letter queue, or the runtime at the first transaction."""

    outage: bool = False
    dead_letter_queue_down: bool = False
    #: The runtime dies just "before" or just "after" the batch's first `TransactWriteItems`.
    crash: str | None = None


@dataclass(frozen=True)
class Record:
    status: str
    fingerprint: str


@dataclass(frozen=True)
class Fate:
    rule: str
    code: str | None = None

    @property
    def outcome(self) -> str:
        return RULE[self.rule].outcome

    @property
    def reported(self) -> bool:
        return RULE[self.rule].reported == "yes"


@dataclass(frozen=True)
class DeadLetter:
    index: int  # of the delivery in the batch
    key: str  # its `inbox-message-key`
    code: str


@dataclass
class BatchRun:
    fates: dict[int, Fate] = field(default_factory=dict)
    records: dict[str, Record] = field(default_factory=dict)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    applied: Counter[str] = field(default_factory=Counter)
    rejections: Counter[str] = field(default_factory=Counter)
    #: The runtime died at the batch's first transaction (`Faults.crash`): what is above is
    #: what it left, and the source delivers the whole batch again.
    crashed: bool = False


class _Crashed(Exception):
    pass


def unreadable_code(source: Source, body: Body) -> str:
    """Bytes that are not UTF-8 (a Kafka value, Kinesis data) are `undecodable_body`; the rest
    that cannot be read is `malformed_json` (docs/errors.md)."""
    binary = source in (Source.KAFKA, Source.KINESIS)
    return "undecodable_body" if body is Body.UNDECODABLE and binary else "malformed_json"


def _raised(raises: Raises) -> Fate:
    """The fate of a record whose model or decide raised (docs/errors.md)."""
    kinds = set(raises.kinds)
    if "PoisonMessage" in kinds:
        return Fate("poison-raised", "rejected_by_handler")
    if raises.callback == "model":
        if kinds & MODEL_REFUSALS:
            return Fate("refused", "invalid_payload")
        return Fate("handler-error", "handler_error")
    if kinds & {"UnitOfWorkError", "UnicodeError"}:
        return Fate("invalid-writes", "invalid_writes")
    return Fate("handler-error", "handler_error")


class _Run:
    def __init__(
        self,
        source: Source,
        records: dict[str, Record],
        batch: list[Delivery],
        consumer: Consumer,
        read_first: bool,
        faults: Faults,
    ) -> None:
        self.source, self.batch, self.consumer, self.faults = source, batch, consumer, faults
        self.result = BatchRun(records=dict(records))
        #: The inbox records the batch read (None: not read, or not yet).
        self.read: dict[str, Record] | None = dict(records) if read_first else None
        self.failed_scopes: dict[str, int] = {}
        self.leaders: dict[str, int] = {}
        self.followers: list[tuple[int, int]] = []
        self.decided: list[int] = []
        #: Dead letters waiting for the next `flush`: (index, fate, key).
        self.pending: list[tuple[int, Fate, str]] = []
        #: Whether the crash of `faults` struck already.
        self.crash_spent = False

    # ---- recording ---------------------------------------------------------------------------

    def settle(self, index: int, fate: Fate, key: str | None = None) -> None:
        """Record `fate`; a dead letter waits for the next `flush` (the batch's poison goes
        out together)."""
        rule = RULE[fate.rule]
        fate = Fate(fate.rule, fate.code or (None if rule.code == NONE else rule.code))
        if rule.dead_letter != NONE:
            self.pending.append((index, fate, key or self.batch[index].key))
        else:
            self.record(index, fate)

    def record(self, index: int, fate: Fate) -> None:
        delivery, result = self.batch[index], self.result
        rule = RULE[fate.rule]
        result.fates[index] = fate
        if rule.reported == "yes" and delivery.scope is not None:
            first = self.failed_scopes.get(delivery.scope, index)
            self.failed_scopes[delivery.scope] = min(first, index)
        if rule.record_after == COMPLETED:
            result.records[delivery.key] = Record(COMPLETED, delivery.fingerprint)
            counter = result.applied if rule.name == "applied" else result.rejections
            counter[delivery.item] += 1

    def flush(self) -> None:
        """Send the waiting dead letters, then write their FAILED records together (in a
        transaction when there are two or more)."""
        pending, self.pending = self.pending, []
        if self.faults.dead_letter_queue_down:  # after one unsent, its scope's others wait
            held: set[str] = set()
            for index, _, _ in pending:
                scope = self.batch[index].scope
                if scope is not None and scope in held:
                    self.record(index, Fate("blocked"))
                    continue
                if scope is not None:
                    held.add(scope)
                self.record(index, Fate("dead-letter-failed", "dead_letter_failed"))
            return
        failed: dict[str, Record] = {}
        for index, fate, key in pending:
            self.record(index, fate)
            self.result.dead_letters.append(DeadLetter(index, key, str(fate.code)))
            stored = self.result.records.get(key)
            if RULE[fate.rule].record_after.startswith(FAILED) and not (
                stored is not None and stored.status == COMPLETED
            ):
                failed[key] = Record(FAILED, self.batch[index].fingerprint)
        if len(failed) > 1 and self.faults.crash is not None and not self.crash_spent:
            # The batch's first transaction writes these records, best effort: a crash there
            # (the kit's, an exception) is a failed write to the library, which goes on.
            self.crash_spent = True
            if self.faults.crash == "before":
                return
        self.result.records.update(failed)

    @property
    def pending_keys(self) -> set[str]:
        return {key for _, _, key in self.pending}

    def blocked(self, index: int) -> bool:
        scope = self.batch[index].scope
        return scope is not None and self.failed_scopes.get(scope, index) < index

    def against(self, index: int, record: Record) -> None:
        """A COMPLETED record exists: a duplicate, or a conflict."""
        same = record.fingerprint == self.batch[index].fingerprint
        self.settle(index, Fate("duplicate" if same else "conflict"))

    def completed(self, records: dict[str, Record], key: str) -> Record | None:
        record = records.get(key)
        return record if record is not None and record.status == COMPLETED else None

    # ---- the steps ---------------------------------------------------------------------------

    def run(self) -> BatchRun:
        try:
            for index in range(len(self.batch)):
                self.triage(index)
            self.flush()  # the batch's poison goes out before anything commits
            for wave in self.waves():
                self.commit(wave)
                self.flush()
        except _Crashed:
            self.result.crashed = True
            return self.result
        self.settle_followers(final=True)
        self.flush()
        return self.result

    def triage(self, index: int) -> None:
        delivery, consumer = self.batch[index], self.consumer
        if self.blocked(index):
            return self.settle(index, Fate("blocked"))
        if consumer.key_from_body and delivery.body in UNREADABLE:
            code = unreadable_code(self.source, delivery.body)
            return self.settle(index, Fate("no-key", code), key=delivery.delivery_id)
        raises = delivery.raises
        if consumer.key_from_body and raises is not None and raises.callback == "key":
            return self.settle(index, Fate("no-key", "missing_key"), key=delivery.delivery_id)
        if self.read is not None and (record := self.completed(self.read, delivery.key)):
            return self.against(index, record)
        if delivery.key in self.pending_keys:  # its leader's fate says what it is
            self.flush()
        leader = self.leaders.get(delivery.key)
        if leader is not None and not self.supersedes(leader, index):
            self.followers.append((index, leader))
            return None
        self.leaders[delivery.key] = index
        fate = self.decide(index)
        if fate is None:
            self.decided.append(index)
        elif fate.outcome == "dead_lettered" and self.read is None:
            self.read = dict(self.result.records)  # poison found while deciding: read now
            for earlier in list(self.decided):
                if record := self.completed(self.read, self.batch[earlier].key):
                    self.decided.remove(earlier)
                    self.against(earlier, record)
            if record := self.completed(self.read, delivery.key):
                return self.against(index, record)
            self.settle(index, fate)
        else:
            self.settle(index, fate)
        return None

    def supersedes(self, leader: int, index: int) -> bool:
        fate = self.result.fates.get(leader)
        different = self.batch[leader].fingerprint != self.batch[index].fingerprint
        return fate is not None and fate.outcome == "dead_lettered" and different

    def decide(self, index: int) -> Fate | None:
        delivery = self.batch[index]
        if delivery.body in UNREADABLE:
            return Fate("unreadable", unreadable_code(self.source, delivery.body))
        raises = delivery.raises
        if raises is not None and raises.callback == "model":
            return _raised(raises)
        if delivery.body is Body.POISON:
            return Fate("refused")
        if raises is not None and raises.callback == "decide":
            return _raised(raises)
        return None

    def waves(self) -> list[list[int]]:
        """Group commit: a message goes into the wave after the last wave that touched any of
        its items; commuting updates of an item wait only for its other touches."""
        last: dict[tuple[str, str], int] = {}
        last_other: dict[tuple[str, str], int] = {}
        waves: list[list[int]] = []
        for index in self.decided:
            delivery = self.batch[index]
            touches = [(("inbox", delivery.key), False)]
            if delivery.body is Body.REJECTED:
                touches.append((("gate", delivery.item), False))
            else:
                touches.append((("item", delivery.item), True))
            wave = 0
            for item, commutes in touches:
                before = last_other.get(item, -1) if commutes else last.get(item, -1)
                wave = max(wave, before + 1)
            while len(waves) <= wave:
                waves.append([])
            waves[wave].append(index)
            for item, commutes in touches:
                last[item] = max(last.get(item, -1), wave)
                if not commutes:
                    last_other[item] = max(last_other.get(item, -1), wave)
        return waves

    def live(self, decisions: list[int]) -> list[int]:
        """The decisions still to send: the followers settled first (a failed one blocks its
        scope), then the blocked decisions skipped."""
        self.settle_followers(final=False)
        live = []
        for index in decisions:
            if self.blocked(index):
                self.settle(index, Fate("blocked"))
            else:
                live.append(index)
        return live

    def commit(self, wave: list[int]) -> None:
        """One wave: one transaction, sent again without the messages a cancellation settled
        (a duplicate, a conflict, a dead-lettered condition) and with the alternative writes of
        a business outcome; the followers whose leader has an outcome are settled after each
        round."""
        live = self.live(wave)
        if self.faults.outage:
            for index in live:
                self.settle(index, Fate("transient"))
            self.settle_followers(final=False)
            return
        records = self.result.records
        again = []
        cancelled = any(
            self.completed(records, self.batch[i].key) or self.batch[i].body is Body.REJECTED
            for i in live
        )
        if live and self.faults.crash is not None and not self.crash_spent:  # the first one
            if self.faults.crash == "after" and not cancelled:
                for index in live:
                    self.settle(index, Fate("applied"))
            raise _Crashed
        for index in live:
            delivery = self.batch[index]
            if not cancelled:
                self.settle(index, Fate("applied"))
            elif record := self.completed(records, delivery.key):
                self.against(index, record)
            elif delivery.body is Body.REJECTED and not self.consumer.alternative:
                self.settle(index, Fate("condition-failed"))
            else:
                again.append(index)
        for index in self.live(again):
            rejected = self.batch[index].body is Body.REJECTED
            self.settle(index, Fate("rejected" if rejected else "applied"))
        self.settle_followers(final=False)

    def settle_followers(self, *, final: bool) -> None:
        waiting = []
        for index, leader in self.followers:
            fate = self.result.fates.get(leader)
            if fate is None and not final:
                waiting.append((index, leader))
            elif self.blocked(index):
                self.settle(index, Fate("blocked"))
            elif fate is None or fate.reported:
                self.settle(index, Fate("leader-failed"))
            elif fate.outcome == "dead_lettered" and not self.supersedes(leader, index):
                self.settle(index, Fate("dead-lettered-before"))
            elif record := self.completed(self.result.records, self.batch[index].key):
                self.against(index, record)
            else:
                self.settle(index, Fate("fix-after-dead-letter"))
        self.followers = waiting


def run_batch(
    source: Source,
    records: dict[str, Record],
    batch: list[Delivery],
    consumer: Consumer,
    *,
    read_first: bool,
    faults: Faults | None = None,
) -> BatchRun:
    """Each record's fate, in the batch's order."""
    return _Run(source, records, batch, consumer, read_first, faults or Faults()).run()


def reported(source: Source, batch: list[Delivery], run: BatchRun) -> list[int]:
    """The records the partial batch response names: every reported one (SQS, Kafka), or the
    first reported one of each shard (streams: Lambda retries the shard from there)."""
    indexes = [index for index in range(len(batch)) if run.fates[index].reported]
    if source not in (Source.KINESIS, Source.DYNAMODB):
        return indexes
    first: dict[str | None, int] = {}
    for index in indexes:
        first.setdefault(batch[index].scope, index)
    return list(first.values())


#: The share of recent batches holding a duplicate above which a batch reads first, and the
#: number of batches over which a batch's weight halves (docs/concepts.md).
RECENT_DUPLICATES = 0.05
HALF_LIFE = 10


@dataclass
class ReadFirst:
    """Whether a batch reads its inbox keys before the commit, in one execution environment:
    when a record was delivered before (an SQS receive count above 1; an offset or sequence
    number at or below the highest this environment has received for its partition or shard),
    when recent batches held duplicates, or when the batch holds poison found while
    identifying (`run_batch` reads late for poison found while deciding)."""

    highest: dict[str, int] = field(default_factory=dict)
    recent: float = 0.0

    def redelivered(self, scope: str, position: int) -> bool:
        """Whether a stream or Kafka record at `position` was received before; remembers it."""
        before = self.highest.get(scope, -1)
        self.highest[scope] = max(before, position)
        return position <= before

    def reason(self, redelivered: bool, poison_identified: bool) -> bool:
        return redelivered or self.recent > RECENT_DUPLICATES or poison_identified

    def observe(self, held_duplicate: bool) -> None:
        decay = 0.5 ** (1 / HALF_LIFE)
        self.recent = self.recent * decay + (1 - decay) * held_duplicate


def poison_identified(consumer: Consumer, batch: list[Delivery]) -> bool:
    """Poison found while identifying: a key read from a body that cannot be read, or whose key
    extractor raises."""
    if not consumer.key_from_body:
        return False
    return any(
        delivery.body in UNREADABLE
        or (delivery.raises is not None and delivery.raises.callback == "key")
        for delivery in batch
    )
