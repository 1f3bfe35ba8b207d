"""Every record's fate is its own, and the documented one: the real pipeline
(`InboxConsumer.handle` on events built with the testing kit) against the reference model of
docs/concepts.md, "Every record's fate" (tests/outcome_model.py), batch after batch.

A Hypothesis state machine produces messages on SQS (standard and FIFO), Kafka, Kinesis and
DynamoDB Streams (tests/batch_feeds.py): new ones of every kind of body (valid, rejected by a
domain condition, refused by the model, undecodable, hostile: a number of 4,301 digits, nesting
20,000 deep, 39 digits in a stream image), resends under new delivery ids, conflicting payloads
under a known key, and payloads for which the key extractor, the model or `decide` raises one of
`RAISING` (the errors the standard library raises while parsing, `MemoryError` simulated) in the
first batch that holds them, and again in a batch with the fault "raising callbacks". It
delivers batches with a fault: a crash just before or just after the first `TransactWriteItems`
(the kit's `crash_on`, then Lambda's retry in a new execution environment), a lost response
(`lose_first_response`), one throttled attempt, a throttling outage, a dead-letter queue that
refuses everything, or the raising callbacks armed again; and lets the sources deliver again (an acknowledged SQS message, a rewound partition or
shard). After every batch it asserts that each record's outcome and code, the partial batch
response, the inbox records, the dead letters (their original bodies) and the domain effects are
the model's; after a crash, the state the crashed attempt left is the model's too (what it
dead-lettered before its first transaction, and that transaction when it committed), and the
batch delivered again is checked against it.

The consumer is built with or without `key=` and `on_condition_failed` (per example). It runs on
`devkit.memory_aws` (conditions, transactions, cancellation reasons, `ClientRequestToken`): the
semantics of one batch after another, not concurrency, which DynamoDB Local proves
(tests/integration/test_stateful_model.py: leases and crashes on the real engine;
tests/integration/test_chaos.py). A scripted tour first walks every source through every rule,
so each run covers them all whatever Hypothesis draws; the run prints its coverage and asserts
it. `make check` and `make test` run the fast profile; `make soak` runs
`BATCH_SEMANTICS_EXAMPLES` examples (`SOAK_SEMANTICS_EXAMPLES`, default 300) of 40 steps.
"""

from __future__ import annotations

import decimal
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, TypeVar

import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, rule

from devkit.app_state import AppState
from devkit.events import replayed
from devkit.items import plain, scan_items
from devkit.memory_aws import MemoryAws
from lambda_inbox import (
    Clients,
    ConditionFailures,
    Decide,
    InboxConfig,
    InboxConsumer,
    MessageResult,
    PoisonMessage,
    RetryPolicy,
    UnitOfWork,
    UnitOfWorkError,
)
from lambda_inbox_tools.testing.faults import LambdaCrashed, crash_on, lose_first_response
from lambda_inbox_tools.testing.stream_events import sequence_number
from tests.batch_feeds import Copy, Feed, Message, dead_letter_body
from tests.conftest import COVERAGE_PROPERTY
from tests.outcome_model import (
    RULES,
    BatchRun,
    Body,
    Consumer,
    Delivery,
    Faults,
    Raises,
    ReadFirst,
    Record,
    Source,
    poison_identified,
    reported,
    run_batch,
)

CONSUMER = "fates"
DOMAIN = "domain"
#: What the callbacks raise: each error the standard library raises while parsing, and the two
#: the library names (MemoryError is raised, not caused).
RAISING: tuple[type[Exception], ...] = (
    ValueError,
    TypeError,
    OverflowError,
    ZeroDivisionError,
    decimal.InvalidOperation,
    UnicodeDecodeError,
    UnicodeError,
    RecursionError,
    MemoryError,
    KeyError,
    IndexError,
    AttributeError,
    json.JSONDecodeError,
    RuntimeError,
    AssertionError,
    NotImplementedError,
    PoisonMessage,
    UnitOfWorkError,
)
RAISING_BY_NAME = {error.__name__: error for error in RAISING}
CRASHES = {"crash before commit": "before-call", "crash after commit": "after-call"}
FAULTS = (
    "none",
    "raising callbacks",
    "raising callbacks",
    "lost response",
    "throttled once",
    "outage",
    "dead-letter queue down",
    *CRASHES,
)
#: Every source and every rule met by the checks of one test run.
COVERAGE: Counter[str] = Counter()


# ---- the consumer's callbacks ---------------------------------------------------------------


class Callbacks:
    """The payloads (id, version) whose marked callback raises in this batch."""

    armed: frozenset[tuple[str, int]] = frozenset()


def raising(error: type[Exception]) -> Exception:
    if error is UnicodeDecodeError:
        return UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    if error is json.JSONDecodeError:
        return json.JSONDecodeError("Expecting value", "x", 0)
    return error("raised by the test's callback")


def spring(fields: dict[str, Any], callback: str) -> None:
    marker = fields.get("raise")
    if marker and marker[0] == callback and (fields["id"], int(fields["v"])) in Callbacks.armed:
        raise raising(RAISING_BY_NAME[marker[1]])


def fields_of(document: Any) -> dict[str, Any]:
    """The payload's fields: a stream record's new image, or the body itself."""
    if isinstance(document, dict) and "NewImage" in document:
        return document["NewImage"] or {}
    return document  # type: ignore[no-any-return]


def key_of(document: Any) -> object:
    fields = fields_of(document)
    spring(fields, "key")
    return fields["id"]


def parse(document: Any) -> dict[str, Any]:
    fields = fields_of(document)
    spring(fields, "model")
    version = fields["v"]
    if isinstance(version, bool) or not isinstance(version, int | Decimal):
        raise ValueError("v must be a number")
    return fields


def decide(fields: dict[str, Any], uow: UnitOfWork) -> None:
    spring(fields, "decide")
    item = fields["id"]
    if fields["kind"] == Body.REJECTED.value:  # its gate never exists: the condition fails
        uow.condition_check(DOMAIN, {"pk": f"GATE#{item}", "sk": "GATE"}, "attribute_exists(pk)")
    else:
        key = {"pk": f"ITEM#{item}", "sk": "ITEM"}
        uow.update(DOMAIN, key, "ADD applied :one", values={":one": 1})


def reject(fields: dict[str, Any], failed: ConditionFailures, uow: UnitOfWork) -> None:
    key = {"pk": f"REJECTED#{fields['id']}", "sk": "REJECTED"}
    uow.update(DOMAIN, key, "ADD rejections :one", values={":one": 1})


# ---- faults ---------------------------------------------------------------------------------


H = TypeVar("H")


def hooks_on(client: Any, kind: Callable[[Any], H]) -> H:
    """The hooks of `kind` on `client`, registered on its first use (once per client)."""
    registered: dict[Any, Any] = client.__dict__.setdefault("_test_hooks", {})
    if kind not in registered:
        registered[kind] = kind(client)
    return registered[kind]  # type: ignore[no-any-return]


class Throttles:
    """DynamoDB's `ThrottlingException` for the commits (`TransactWriteItems` on the domain
    table): once, or for as long as the outage lasts. MemoryAws answers at `before-call`, so the
    kit's `FaultInjector` (which answers at `before-send`) never sees the request: this hook
    answers at the same point, where botocore's own retries never run either; the FAILED
    records' writes, which lean on those retries, are left alone."""

    def __init__(self, client: Any) -> None:
        self.outage = False
        self.once = False
        client.meta.events.register("before-call.dynamodb.TransactWriteItems", self._answer)

    def _answer(
        self, params: dict[str, Any], **_: Any
    ) -> tuple[AWSResponse, dict[str, Any]] | None:
        if not (self.outage or self.once) or f'"{DOMAIN}"'.encode() not in params["body"]:
            return None
        self.once = False
        error = {"Code": "ThrottlingException", "Message": "Rate of requests exceeds the allowed"}
        metadata = {"HTTPStatusCode": 400, "HTTPHeaders": {}, "RequestId": "throttled"}
        http = AWSResponse("https://dynamodb.memory.invalid/", 400, HTTPHeaders(), None)
        return http, {"Error": error, "ResponseMetadata": metadata}


class DeadLetterQueueOutage:
    """The dead-letter queue refuses every message while `down` (`SendMessage` and
    `SendMessageBatch` answer `AWS.SimpleQueueService.NonExistentQueue`)."""

    def __init__(self, client: Any) -> None:
        self.down = False
        for operation in ("SendMessage", "SendMessageBatch"):
            client.meta.events.register(f"before-parameter-build.sqs.{operation}", self._refuse)

    def _refuse(self, model: Any, **_: Any) -> None:
        if self.down:
            code = "AWS.SimpleQueueService.NonExistentQueue"
            raise ClientError({"Error": {"Code": code, "Message": "no queue"}}, str(model.name))


# ---- the machine ----------------------------------------------------------------------------


class BatchSemantics(RuleBasedStateMachine):
    messages: Bundle[Message] = Bundle("messages")

    def __init__(self) -> None:
        super().__init__()
        self.memory, self.aws, self.steady = shared_aws()
        self.dead_letter_queue = hooks_on(self.aws.sqs, DeadLetterQueueOutage)
        self.memory.clear_items()
        self.memory.drain(self.aws.dlq_url)
        self.feeds = {source: Feed(source) for source in Source}
        self.shape = Consumer(key_from_body=True)
        self.records: dict[str, Record] = {}
        self.applied: Counter[str] = Counter()
        self.rejections: Counter[str] = Counter()
        self.produced = 0
        self.broken = False
        #: The marked payloads a batch has held (their callbacks raise only when armed again).
        self.sprung: set[Message] = set()
        #: The fingerprint stored for each model token, and back: one to one.
        self.fingerprints: dict[str, str] = {}
        self.tokens: dict[str, str] = {}

    def new_environment(self, *, own_client: bool = False) -> None:
        """A new Lambda execution environment: a consumer of its own with nothing seen yet; a
        client of its own when the kit's faults are to be armed on it (they stay registered)."""
        dynamodb = self.memory.botocore_client("dynamodb") if own_client else self.steady
        self.throttles = hooks_on(dynamodb, Throttles)
        config = InboxConfig(
            consumer=CONSUMER,
            inbox_table=self.aws.inbox,
            dead_letter_queue_url=self.aws.dlq_url,
            retry=RetryPolicy(max_attempts=3, base_delay=0.0005, max_delay=0.001),
        )
        self.consumer: InboxConsumer[Any] = InboxConsumer(
            CONSUMER,
            model=parse,
            decide=Decide(decide, on_condition_failed=reject) if self.shape.alternative else decide,
            key=key_of if self.shape.key_from_body else None,
            clients=Clients(dynamodb=dynamodb, sqs=self.aws.sqs),
            config=config,
        )
        self.results: list[MessageResult] = []
        pipeline = self.consumer.pipeline
        process = pipeline.process

        def recording(messages: Any, deadline: Any) -> list[MessageResult]:
            """Each record's result (a Kinesis batch goes through in chunks)."""
            results = process(messages, deadline)
            self.results.extend(results)
            return results

        pipeline.process = recording  # type: ignore[method-assign]
        self.environment = ReadFirst()

    @initialize(key_from_body=st.booleans(), alternative=st.booleans())
    def configure(self, key_from_body: bool, alternative: bool) -> None:
        self.shape = Consumer(key_from_body, alternative)
        self.new_environment()

    # ---- producers ---------------------------------------------------------------------------

    def _publish(self, message: Message) -> Message:
        self.feeds[message.source].publish(message)
        return message

    @rule(target=messages, source=st.sampled_from(Source), body=st.sampled_from(Body))
    def produce(self, source: Source, body: Body) -> Message:
        self.produced += 1
        return self._publish(Message(source, f"{source.name.lower()}-{self.produced}", 0, body))

    @rule(target=messages, original=messages, body=st.sampled_from(Body))
    def produce_conflicting(self, original: Message, body: Body) -> Message:
        """Another payload under a key already sent."""
        self.produced += 1
        return self._publish(Message(original.source, original.id, self.produced, body))

    @rule(original=messages, copies=st.integers(1, 2))
    def resend(self, original: Message, copies: int = 1) -> None:
        """The producer sends the same message again (a new delivery id), once or twice in a
        row (so a batch often holds a key twice)."""
        for _ in range(copies):
            self._publish(original)

    @rule(
        target=messages,
        source=st.sampled_from(Source),
        callback=st.sampled_from(["key", "model", "decide"]),
        error=st.sampled_from(RAISING),
        body=st.sampled_from([Body.VALID, Body.REJECTED]),
    )
    def produce_raising(
        self, source: Source, callback: str, error: type[Exception], body: Body
    ) -> Message:
        self.produced += 1
        raises = Raises(callback, tuple(kind.__name__ for kind in error.__mro__))
        message = Message(source, f"{source.name.lower()}-{self.produced}", 0, body, raises)
        return self._publish(message)

    # ---- the sources -------------------------------------------------------------------------

    @rule(
        source=st.sampled_from(Source),
        size=st.integers(1, 6),
        start=st.integers(0, 20),
        fault=st.sampled_from(FAULTS),
    )
    def deliver(self, source: Source, size: int, start: int, fault: str) -> None:
        feed = self.feeds[source]
        if not feed.has_pending():
            return
        batch = feed.take(size, start)
        self.broken = True  # until the batch checked out: a failed step leaves nothing to drain
        if fault in CRASHES:
            self.crash(feed, batch, CRASHES[fault])
        else:
            self.invoke(feed, batch, fault)
        self.broken = False

    @rule(source=st.sampled_from(Source), pick=st.integers(0, 20))
    def deliver_again(self, source: Source, pick: int) -> None:
        self.feeds[source].deliver_again(pick)

    def teardown(self) -> None:
        """Everything pending is delivered, without faults, until every source is done."""
        if self.broken:
            return
        for _ in range(40):
            busy = [feed for feed in self.feeds.values() if feed.has_pending()]
            if not busy:
                return
            for feed in busy:
                self.invoke(feed, feed.take(10), "none")
        raise AssertionError("records still pending after 40 rounds of deliveries")

    # ---- one invocation ----------------------------------------------------------------------

    def arm(self, batch: list[Copy], *, every: bool) -> None:
        """The marked callbacks raise in the first batch that holds their payload (any copy),
        and in every batch with the fault "raising callbacks"."""
        marked = {copy.message for copy in batch if copy.message.raises is not None}
        chosen = marked if every else marked - self.sprung
        self.sprung |= marked
        Callbacks.armed = frozenset((message.id, message.version) for message in chosen)

    def deliveries(self, feed: Feed, batch: list[Copy]) -> list[Delivery]:
        keyed = self.shape.key_from_body
        return [
            Delivery(
                key=copy.message.id if keyed else feed.unkeyed_key(copy),
                delivery_id=feed.fallback_key(copy),
                fingerprint=self._token(feed, copy),
                body=copy.message.body,
                item=copy.message.id,
                scope=copy.scope,
                raises=copy.message.raises if copy.message.armed_in(Callbacks.armed) else None,
            )
            for copy in batch
        ]

    @staticmethod
    def _token(feed: Feed, copy: Copy) -> str:
        # An unreadable stream record hashes as delivered: its JSON names the record itself.
        unreadable = copy.message.body in (Body.UNDECODABLE, Body.HOSTILE)
        if feed.source is Source.DYNAMODB and unreadable:
            return f"{copy.message.token}@{copy.delivery_id}"
        return copy.message.token

    def reads_first(self, feed: Feed, batch: list[Copy], deliveries: list[Delivery]) -> bool:
        if feed.ordered_log:
            seen = [self.environment.redelivered(str(c.scope), c.position) for c in batch]
            redelivered = any(seen)
        else:
            redelivered = any(copy.receives > 0 for copy in batch)
        return self.environment.reason(redelivered, poison_identified(self.shape, deliveries))

    def expect(self, feed: Feed, batch: list[Copy], faults: Faults | None = None) -> BatchRun:
        deliveries = self.deliveries(feed, batch)
        read_first = self.reads_first(feed, batch, deliveries)
        self.batch = deliveries
        return run_batch(
            feed.source, self.records, deliveries, self.shape, read_first=read_first, faults=faults
        )

    def handle(self, feed: Feed, batch: list[Copy]) -> dict[str, Any]:
        self.results = []
        return self.consumer.handle(feed.event(batch))

    def invoke(self, feed: Feed, batch: list[Copy], fault: str) -> None:
        if fault == "lost response":  # on a client of its own: the kit's hook stays armed
            self.new_environment(own_client=True)
        faults = Faults(fault == "outage", fault == "dead-letter queue down")
        self.arm(batch, every=fault == "raising callbacks")
        expected = self.expect(feed, batch, faults)
        with self.faults(fault):
            response = self.handle(feed, batch)
        self.settle(feed, batch, expected, response)

    @contextmanager
    def faults(self, fault: str) -> Iterator[None]:
        self.throttles.outage = fault == "outage"
        self.throttles.once = fault == "throttled once"
        self.dead_letter_queue.down = fault == "dead-letter queue down"
        if fault == "lost response":  # whenever it comes, the same request is sent again
            lose_first_response(self.consumer.dynamodb)
        try:
            yield
        finally:
            Callbacks.armed = frozenset()
            self.throttles.outage = self.throttles.once = False
            self.dead_letter_queue.down = False

    def crash(self, feed: Feed, batch: list[Copy], hook: str) -> None:
        """The runtime dies at `hook` of the batch's first `TransactWriteItems` (when the batch
        sends one); Lambda delivers the whole batch again, in a new execution environment."""
        self.new_environment(own_client=True)
        crash_on(self.consumer.dynamodb, hook)
        when = "before" if hook == "before-call" else "after"
        self.arm(batch, every=False)
        first = self.expect(feed, batch, Faults(crash=when))
        if not first.crashed:
            self.settle(feed, batch, first, self.handle(feed, batch))
            self.new_environment()
            return
        with pytest.raises(LambdaCrashed):
            self.handle(feed, batch)
        self._take_state(feed, batch, first)  # what the crashed attempt left
        feed.answer(batch, None)
        self.new_environment()
        self.arm(batch, every=False)
        self.settle(feed, batch, self.expect(feed, batch), self.handle(feed, batch))

    # ---- the checks --------------------------------------------------------------------------

    def settle(
        self, feed: Feed, batch: list[Copy], expected: BatchRun, response: dict[str, Any]
    ) -> None:
        """Assert the batch's every result against the model, then take the model's state."""
        deliveries = self.batch
        fates = [expected.fates[index] for index in range(len(batch))]
        actual = [(result.outcome.value, result.error_code) for result in self.results]
        wanted = [(fate.outcome, fate.code) for fate in fates]
        assert actual == wanted, self._explain(feed, deliveries, fates, actual)
        names = reported(feed.source, deliveries, expected)
        assert response == {"batchItemFailures": [identifier(feed, batch[i]) for i in names]}
        self._take_state(feed, batch, expected)
        self.environment.observe(any(r.outcome.value == "duplicate" for r in self.results))
        feed.answer(batch, names)
        COVERAGE[f"source: {feed.source.value}"] += 1
        COVERAGE.update(f"rule: {fate.rule}" for fate in fates)

    def _take_state(self, feed: Feed, batch: list[Copy], expected: BatchRun) -> None:
        """The inbox records, the dead letters and the domain effects are the model's: take
        them as the state the next batch meets."""
        self._check_records(expected.records)
        self._check_dead_letters(feed, batch, expected)
        self.applied += expected.applied
        self.rejections += expected.rejections
        self._check_domain()
        self.records = expected.records

    def _explain(
        self, feed: Feed, deliveries: list[Delivery], fates: list[Any], actual: list[Any]
    ) -> str:
        lines = [f"{feed.source.value}, {self.shape}, records before: {self.records}"]
        for delivery, fate, got in zip(deliveries, fates, actual, strict=True):
            lines.append(f"  {delivery} -> model {fate}, pipeline {got}")
        return "\n".join(lines)

    def _check_records(self, expected: dict[str, Record]) -> None:
        stored = {
            str(item["message_key"]): item
            for item in map(plain, scan_items(self.aws.dynamodb, self.aws.inbox))
        }
        assert {key: item["status"] for key, item in stored.items()} == {
            key: record.status for key, record in expected.items()
        }
        for key, record in expected.items():
            fingerprint = str(stored[key]["fingerprint"])
            assert self.fingerprints.setdefault(record.fingerprint, fingerprint) == fingerprint
            assert self.tokens.setdefault(fingerprint, record.fingerprint) == record.fingerprint

    def _check_dead_letters(self, feed: Feed, batch: list[Copy], expected: BatchRun) -> None:
        """The dead letters sent since the last check are the model's: keys, codes and each
        original body (as sorted lists: the order of sending is not the rule)."""
        letters = sorted(
            repr(
                (
                    letter["MessageAttributes"]["inbox-message-key"]["StringValue"],
                    letter["MessageAttributes"]["inbox-error-code"]["StringValue"],
                    dead_letter_body(feed.source, replayed(letter).body),
                )
            )
            for letter in self.memory.drain(self.aws.dlq_url)
        )
        wanted = sorted(
            repr((letter.key, letter.code, feed.original(batch[letter.index])))
            for letter in expected.dead_letters
        )
        assert letters == wanted

    def _check_domain(self) -> None:
        applied: Counter[str] = Counter()
        rejections: Counter[str] = Counter()
        for item in map(plain, scan_items(self.aws.dynamodb, DOMAIN)):
            name, item_id = str(item["pk"]).split("#", 1)
            if name == "ITEM":
                applied[item_id] += int(item["applied"])
            elif name == "REJECTED":
                rejections[item_id] += int(item["rejections"])
        assert (applied, rejections) == (+self.applied, +self.rejections)


_SHARED: list[tuple[MemoryAws, AppState, Any]] = []


def shared_aws() -> tuple[MemoryAws, AppState, Any]:
    """One in-memory AWS for the whole run (emptied by each example), its tables and queues,
    and the DynamoDB client of environments that arm no fault of the kit: a client costs more
    than a batch."""
    if not _SHARED:
        memory = MemoryAws()
        aws = AppState.created(memory.client("dynamodb"), memory.client("sqs"))
        _SHARED.append((memory, aws, memory.botocore_client("dynamodb")))
    return _SHARED[0]


def identifier(feed: Feed, copy: Copy) -> Any:
    """A record's `itemIdentifier` in its source's partial batch response."""
    if feed.source is Source.KAFKA:
        return {"itemIdentifier": {"topic-partition": copy.scope, "offset": copy.position}}
    if feed.source in (Source.KINESIS, Source.DYNAMODB):
        return {"itemIdentifier": sequence_number(copy.position)}
    return {"itemIdentifier": copy.delivery_id}


# ---- the runs -------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "CRITICAL")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")


def run(examples: int, steps: int, *, derandomize: bool) -> str:
    """The tour, then `examples` examples of the machine; returns the coverage, asserted whole."""
    COVERAGE.clear()
    tour()
    BatchSemantics.TestCase.settings = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=derandomize,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    BatchSemantics.TestCase().runTest()
    sources = [f"source: {source.value}" for source in Source]
    rules = [f"rule: {rule.name}" for rule in RULES]
    covered = (
        "batches checked per source: "
        + ", ".join(f"{name.split(': ')[1]} {COVERAGE[name]}" for name in sources)
        + "; records per rule: "
        + ", ".join(f"{name.split(': ')[1]} {COVERAGE[name]}" for name in rules)
    )
    print(covered)
    assert [name for name in sources + rules if not COVERAGE[name]] == [], covered
    return covered


def test_every_record_meets_its_documented_fate(record_property: Any) -> None:
    record_property(COVERAGE_PROPERTY, run(examples=20, steps=30, derandomize=True))


@pytest.mark.soak
def test_every_record_meets_its_documented_fate_at_length(record_property: Any) -> None:
    examples = int(os.environ.get("BATCH_SEMANTICS_EXAMPLES", "300"))
    record_property(COVERAGE_PROPERTY, run(examples, 40, derandomize=False))


def tour() -> None:
    """Every rule on every source that can meet it, in scripted steps of the same machine (so
    each run covers them all, whatever Hypothesis draws). Each `deliver` is checked against
    the model as any other."""
    for source in Source:
        for key_from_body, alternative in ((True, True), (True, False), (False, True)):
            machine = BatchSemantics()
            machine.configure(key_from_body, alternative)
            walk(machine, source, crashes=alternative and key_from_body)
            machine.teardown()


def walk(machine: BatchSemantics, source: Source, *, crashes: bool) -> None:
    def deliver(fault: str = "none") -> None:
        machine.deliver(source, 10, 0, fault)

    valid = machine.produce(source, Body.VALID)
    deliver()  # applied
    machine.resend(valid)
    deliver()  # duplicate
    machine.produce_conflicting(valid, Body.VALID)
    deliver()  # conflict (with the key from the body)
    for body in (Body.REJECTED, Body.POISON, Body.UNDECODABLE, Body.HOSTILE):
        machine.produce(source, body)
    deliver()  # rejected or condition-failed, refused, no-key or unreadable
    poison = machine.produce(source, Body.POISON)
    machine.resend(poison)
    deliver()  # refused, dead-lettered-before
    for callback, error in (
        ("model", MemoryError),
        ("model", OverflowError),
        ("decide", PoisonMessage),
        ("decide", UnicodeError),
        ("key", KeyError),
    ):
        machine.produce_raising(source, callback, error, Body.VALID)
    failing = machine.produce_raising(source, "decide", RuntimeError, Body.VALID)
    machine.resend(failing)
    deliver("raising callbacks")  # handler-error, poison-raised, invalid-writes, leader-failed
    machine.produce(source, Body.VALID)
    deliver("outage")  # transient, blocked
    machine.produce(source, Body.POISON)
    machine.produce(source, Body.VALID)
    deliver("dead-letter queue down")  # dead-letter-failed, blocked
    rejected = machine.produce(source, Body.REJECTED)
    valid = machine.produce(source, Body.VALID)
    machine.produce_conflicting(rejected, Body.VALID)
    machine.resend(valid)
    # Without on_condition_failed: condition-failed, dead-lettered after the wave, and then
    # fix-after-dead-letter; the resend of the valid one was settled (a duplicate) before.
    deliver()
    if crashes:  # each arms the kit's hook on a client of its own
        poison = machine.produce(source, Body.POISON)
        machine.produce_conflicting(poison, Body.VALID)
        # The fix commits before the runtime dies: delivered again, the poison is a conflict.
        deliver("crash after commit")
        machine.produce(source, Body.REJECTED)
        deliver("crash before commit")
