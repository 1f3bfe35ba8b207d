"""The testing kit's effectively-once check against a zoo of broken consumers (devkit.zoo),
each caught for every seed played (`ZOO_SEEDS`: 0 in `make check`, 0-1 in `make test`, 0-49 in
`make soak`) on SQS standard, SQS FIFO, Kafka, Kinesis and DynamoDB Streams (where it is broken
there and the check can see it: `SOUND_ON`, `UNSEEN_ON`; the SNS consumers on a queue an SNS
topic feeds: `ONLY_ON`), while the correct controls pass all of them; and what the check plays
every run, whatever the draws. (The example consumers pass it on
DynamoDB Local: tests/integration/kit/.)"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from devkit.zoo import (
    BROKEN,
    CONTROLS,
    ONLY_ON,
    SOUND_ON,
    SOURCES,
    UNSEEN_ON,
    Ledger,
    check,
    records,
    seeds_played,
    sources,
    transactional_inbox,
    verdict,
)
from devkit.zoo_mapping import deployed
from devkit.zoo_sns import SNS, keyed_by_the_sqs_message_id, with_the_sns_envelope
from lambda_inbox_tools.testing import (
    NotEffectivelyOnce,
    Report,
    check_effectively_once,
    kafka_record,
    payload,
    sqs_record,
)

SEEDS = seeds_played()


BROKEN_PAIRS = [(consumer, source) for consumer in BROKEN for source in sources(consumer)]
CONTROL_PAIRS = [(control, source) for control in CONTROLS for source in sources(control)]


@pytest.mark.parametrize(("consumer", "source"), BROKEN_PAIRS)
def test_every_broken_consumer_is_caught_for_every_seed(consumer: str, source: str) -> None:
    said = {seed: verdict(BROKEN[consumer], source, seed) for seed in SEEDS}
    assert [seed for seed, finding in said.items() if finding is None] == []


def test_a_dynamodb_stream_consumer_keyed_by_event_id_is_sound() -> None:
    """What SOUND_ON says: a stream record's eventID is stable, so keying on it is no bug there,
    and the check, which plays every redelivery a stream makes, passes it."""
    keyed_by_event_id = BROKEN["key includes the delivery id"]
    assert [seed for seed in SEEDS if verdict(keyed_by_event_id, "dynamodb", seed)] == []
    skipped = sum(map(len, SOUND_ON.values())) + sum(map(len, UNSEEN_ON.values()))
    some_sources = [name for name in BROKEN if name in ONLY_ON]
    everywhere = len(BROKEN) - len(some_sources)
    chosen = sum(len(ONLY_ON[name]) for name in some_sources)
    assert len(BROKEN_PAIRS) == everywhere * len(SOURCES) - skipped + chosen
    on_sns = [name for name in some_sources if ONLY_ON[name] == (SNS,)]
    assert [(name, SNS) for name in on_sns] == [p for p in BROKEN_PAIRS if p[1] == SNS]


@pytest.mark.parametrize(("control", "source"), CONTROL_PAIRS)
def test_a_correct_consumer_passes_every_seed(control: str, source: str) -> None:
    """The transactional inbox, and the code of the consumers broken by their template under
    a template that suits it."""
    assert [seed for seed in SEEDS if verdict(CONTROLS[control], source, seed)] == []


def test_the_report_names_the_settings_played_and_where_they_came_from() -> None:
    templated = check(CONTROLS["a whole batch of 10 in one transaction"], "sqs", 0)
    assert str(templated.settings) == (
        "BatchSize 10 (template ZooFunction.Queue), "
        "ReportBatchItemFailures on (template ZooFunction.Queue)"
    )
    assert str(templated.settings) in str(templated)
    plain = check(transactional_inbox, "sqs", 0)  # no template: batch_size=4 given
    assert str(plain.settings) == (
        "BatchSize 4 (argument), ReportBatchItemFailures on (default (no template))"
    )


def test_arguments_override_the_template() -> None:
    """The consumer that reports failures without the setting passes when the test says the
    mapping reads its responses: what the template says is what makes it broken."""
    broken = BROKEN["partial responses without ReportBatchItemFailures"]
    for seed in range(3):
        ledger = Ledger.in_memory()
        report = check_effectively_once(
            broken(ledger),
            records("sqs"),
            effects=ledger.effects,
            key=lambda record: payload(record)["event_id"],
            clients=[ledger.dynamodb],
            seed=seed,
            report_batch_item_failures=True,
        )
        assert report.settings is not None and report.settings.report_from == "argument"


@pytest.mark.parametrize(
    ("properties", "says"),
    [
        ({"BatchSize": 100}, "without MaximumBatchingWindowInSeconds"),
        ({"BatchSize": 11, "MaximumBatchingWindowInSeconds": 1}, None),
    ],
)
def test_a_mapping_lambda_refuses_is_refused(properties: dict[str, Any], says: str | None) -> None:
    ledger = Ledger.in_memory()
    handler = deployed(transactional_inbox(ledger), **properties)

    def run() -> Report:
        return check_effectively_once(
            handler,
            records("sqs"),
            effects=ledger.effects,
            key=lambda record: payload(record)["event_id"],
            clients=[ledger.dynamodb],
        )

    if says is None:
        settings = run().settings
        assert settings is not None and settings.batch_size == 11
    else:
        with pytest.raises(ValueError, match=says):
            run()


@pytest.mark.parametrize("source", SOURCES)
def test_every_run_plays_duplicates_new_ids_and_each_fault(source: str) -> None:
    for seed in range(10):
        report = check(transactional_inbox, source, seed)
        assert report.duplicates or source in ("kafka", "kinesis", "dynamodb"), report
        assert report.new_ids >= 1 or source == "dynamodb", report  # no new ids: SOUND_ON
        assert {kind: n > 0 for kind, n in report.crashes.items()} == dict.fromkeys(
            ("after", "before", "error", "dynamodb", "lost"), True
        ), report
        assert all(1 in writes for writes in report.positions.values()), report
        assert sum(report.dynamodb.values()) == report.crashes["dynamodb"], report


@pytest.mark.parametrize(("source", "lanes"), [("kafka", 3), ("kinesis", 2), ("dynamodb", 1)])
def test_every_kafka_partition_and_stream_shard_is_rewound_in_every_run(
    source: str, lanes: int
) -> None:
    for seed in range(10):
        assert check(transactional_inbox, source, seed).replays >= lanes


def test_a_stream_invocation_holds_one_shard_in_order_and_retries_from_the_reported_record() -> (
    None
):
    ledger = Ledger.in_memory()
    inner = transactional_inbox(ledger)
    batches: list[list[str]] = []
    fail_once = {"E-5"}

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        ids = [payload(r)["event_id"] for r in event["Records"]]
        batches.append(ids)
        failing = [r for r in event["Records"] if payload(r)["event_id"] in fail_once]
        if failing:  # the records before it commit; it and the rest come back
            fail_once.clear()
            position = event["Records"].index(failing[0])
            inner({"Records": event["Records"][:position]}, context)
            number = failing[0]["kinesis"]["sequenceNumber"]
            return {"batchItemFailures": [{"itemIdentifier": number}]}
        return inner(event, context)

    report = check_effectively_once(
        handler,
        records("kinesis", 12),
        effects=ledger.effects,
        key=lambda record: payload(record)["event_id"],
        clients=[ledger.dynamodb],
        crash_rate=0,
        duplicate_rate=0,
        batch_size=4,
    )
    shard = {f"E-{n}": n % 2 for n in range(12)}
    for ids in batches:
        assert len({shard[i] for i in ids}) == 1 and len(ids) <= 4  # one shard
        numbers = [int(i.removeprefix("E-")) for i in ids]
        assert numbers == sorted(numbers)  # in sequence order
    with_e5 = [ids for ids in batches if "E-5" in ids]
    assert len(with_e5) == 2 and with_e5[1][0] == "E-5", batches  # failed, then from E-5 on
    assert report.invocations == len(batches)


def test_faults_land_on_any_write_of_an_invocation_not_only_the_first() -> None:
    """Over 20 seeds whatever `ZOO_SEEDS` says: a claim about the spread of the draws."""
    hit: Counter[int] = Counter()
    for seed in range(20):
        hit += check(transactional_inbox, "sqs", seed).fault_writes
    assert max(hit) == 4 and all(hit[n] for n in (1, 2, 3, 4)), hit  # 4 writes a batch of 4


def test_a_kafka_invocation_never_holds_more_than_batch_size_records() -> None:
    ledger = Ledger.in_memory()
    inner = transactional_inbox(ledger)
    sizes: list[int] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        sizes.append(sum(len(r) for r in event["records"].values()))
        return inner(event, context)

    check_effectively_once(
        handler,
        [kafka_record(n % 3, n // 3, {"event_id": f"E-{n}"}) for n in range(30)],
        effects=ledger.effects,
        key=lambda record: payload(record)["event_id"],
        clients=[ledger.dynamodb],
        batch_size=7,
    )
    assert max(sizes) == 7


def test_a_handler_writing_through_clients_the_check_was_not_given_is_refused() -> None:
    ledger = Ledger.in_memory()
    with pytest.raises(
        ValueError, match=r"pass the clients the handler writes through as clients="
    ):
        check_effectively_once(
            transactional_inbox(ledger),
            records("sqs"),
            effects=ledger.effects,
            key=lambda record: payload(record)["event_id"],
        )


def test_a_handler_that_writes_nothing_needs_no_clients() -> None:
    report = check_effectively_once(
        lambda event, context: {"batchItemFailures": []},
        records("sqs"),
        effects=list,
        key=lambda record: None,
    )
    assert not report.crashes


def test_a_run_that_cannot_finish_shows_the_handlers_exception() -> None:
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for record in event["Records"]:
            json.loads(record["body"])["invoice_id"]  # the producer calls it event_id
        return {"batchItemFailures": []}

    with pytest.raises(NotEffectivelyOnce) as raised:
        check_effectively_once(
            handler,
            records("sqs"),
            effects=list,
            key=lambda record: None,
            max_invocations=20,
        )
    message = str(raised.value)
    assert "still unacknowledged after 20 invocations" in message
    assert "the handler raised 20 times, last KeyError: 'invoice_id'" in message
    assert "test_effectively_once_zoo.py" in message


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: [sqs_record("{}", group="g", arn="arn:aws:sqs:us-east-1:1:q")], "a standard"),
        (
            lambda: [{**sqs_record("{}"), "eventSourceARN": "arn:aws:sqs:us-east-1:1:q.fifo"}],
            "FIFO queues with a MessageGroupId",
        ),
        (
            lambda: [sqs_record("{}", group="g"), sqs_record("{}")],
            "FIFO queues with a MessageGroupId",
        ),
    ],
    ids=["group-on-a-standard-queue", "fifo-arn-without-group", "mixed"],
)
def test_fifo_records_need_fifo_names_and_arns(build: Callable[[], Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        check_effectively_once(
            lambda event, context: None, build(), effects=list, key=lambda record: None
        )


def test_a_kafka_record_delivered_again_under_a_new_offset_is_its_event_sent_again() -> None:
    """What a producer retry looks like to the consumer: the same event serialized again
    (other bytes), its volatile `sent_at` a second later, at a later offset of the same
    partition."""
    ledger = Ledger.in_memory()
    seen: list[tuple[str, int, bytes]] = []
    inner = transactional_inbox(ledger)

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for tp, batch in event["records"].items():
            seen.extend((tp, r["offset"], base64.b64decode(r["value"])) for r in batch)
        return inner(event, context)

    report = check(lambda _: handler, "kafka", 3)
    assert report.new_ids >= 1
    by_event: dict[str, set[tuple[str, int, bytes]]] = {}
    for tp, offset, value in seen:
        by_event.setdefault(json.loads(value)["event_id"], set()).add((tp, offset, value))
    again = [sends for sends in by_event.values() if len({o for _, o, _ in sends}) > 1]
    assert again, by_event
    for sends in again:
        assert len({tp for tp, _, _ in sends}) == 1  # the same partition
        assert len({value for _, _, value in sends}) > 1  # other bytes
        events = [json.loads(value) for _, _, value in sends]
        assert len({e["event_id"] for e in events}) == 1
        assert len({e["points"] for e in events}) == 1
        assert len({e["sent_at"] for e in events}) > 1  # stamped anew


@pytest.mark.parametrize(
    ("source", "lanes"), [(s, {"kafka": 3, "kinesis": 2}.get(s, 1)) for s in SOURCES]
)
def test_every_run_keeps_its_promises_with_the_templates_big_batches(
    source: str, lanes: int
) -> None:
    """Few invocations (the template's BatchSize 100 takes a lane whole) still play every owed
    fault, a duplicate or a rewind of every lane, and a message under a new id: smaller batches
    while faults are owed, and what is still owed at the end."""
    for seed in range(10):
        ledger = Ledger.in_memory()
        handler = deployed(
            transactional_inbox(ledger),
            BatchSize=100,
            MaximumBatchingWindowInSeconds=1,
            FunctionResponseTypes=["ReportBatchItemFailures"],
        )
        report = check_effectively_once(
            handler,
            records(source, 30),
            effects=ledger.effects,
            key=lambda record: payload(record)["event_id"],
            clients=[ledger.dynamodb],
            seed=seed,
        )
        assert {kind for kind, n in report.crashes.items() if n} == {
            "after",
            "before",
            "error",
            "dynamodb",
            "lost",
        }, report
        assert report.new_ids >= 1 or source == "dynamodb", report
        if source in ("sqs", "fifo"):
            assert report.duplicates >= 1, report
        else:
            assert report.replays >= lanes, report


def test_a_loss_is_witnessed_before_an_owed_redelivery_repairs_it() -> None:
    """A consumer that acknowledges a batch whose write failed loses it; the duplicate the run
    owes would write it after all, so the check looks at the effects before playing it."""
    for seed in range(10):
        ledger = Ledger.in_memory()
        handler = deployed(
            BROKEN["acknowledge without writing"](ledger),
            BatchSize=100,
            MaximumBatchingWindowInSeconds=1,
            FunctionResponseTypes=["ReportBatchItemFailures"],
        )
        with pytest.raises(NotEffectivelyOnce, match=r"^lost: "):
            check_effectively_once(
                handler,
                records("sqs", 8),
                effects=ledger.effects,
                key=lambda record: payload(record)["event_id"],
                clients=[ledger.dynamodb],
                seed=seed,
            )


def test_a_fifo_response_acknowledging_after_a_failure_in_its_group_is_named() -> None:
    with pytest.raises(NotEffectivelyOnce, match=r"acknowledged out of order: G-\d: ") as raised:
        check(BROKEN["goes on after a failure in its group"], "fifo", 0)
    assert "lost" not in str(raised.value).split("(")[0]  # nothing lost: only the order
    report = check(CONTROLS["partial responses with ReportBatchItemFailures"], "fifo", 0)
    assert report.order_checks > 0 and report.out_of_order == []
    assert f"{report.order_checks} responses judged for order" in str(report)


def test_acknowledged_after_a_failure_names_each_later_message_of_the_failed_group() -> None:
    from lambda_inbox_tools.testing.check.sources.order import acknowledged_after_a_failure

    batch = [{"g": g, "id": i} for g, i in [("A", "a1"), ("B", "b1"), ("A", "a2"), ("A", "a3")]]
    found = acknowledged_after_a_failure(
        batch, {"b1", "a2", "a3"}, lambda r: r["g"], lambda r: r["id"]
    )
    assert found == ["A: a2 after a1", "A: a3 after a1"]
    in_order = acknowledged_after_a_failure(
        batch, {"a1", "b1"}, lambda r: r["g"], lambda r: r["id"]
    )
    assert in_order == []  # a failure and everything after it reported: no violation


@pytest.mark.parametrize("source", SOURCES)
def test_every_run_plays_two_invocations_holding_the_same_messages(source: str) -> None:
    """On every source, twice a run (`check.overlap`): an SQS visibility timeout running out
    mid-invocation (standard or FIFO), a Kafka rebalance, a stream's retry of an invocation
    still running; the first on the run's first batch of new work."""
    for seed in range(5):
        report = check(CONTROLS["transactional inbox"], source, seed)
        assert report.overlaps == 2, report
        assert "2 overlapping invocations" in str(report)


def test_sns_redelivers_a_notification_unchanged_under_a_new_sqs_message_id() -> None:
    """SNS's redelivery, played every run on a queue an SNS topic feeds: the same notification,
    byte for byte, under another SQS `messageId`; named in the report."""
    for seed in SEEDS:
        seen: dict[str, set[str]] = {}

        def watched(ledger: Ledger, seen: dict[str, set[str]] = seen) -> Any:
            inner = with_the_sns_envelope(ledger)

            def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
                for record in event["Records"]:
                    seen.setdefault(record["body"], set()).add(record["messageId"])
                return inner(event, context)

            return handler

        report = check(watched, SNS, seed)
        assert report.sns_redeliveries >= 1 and report.sns_redeliveries == report.new_ids, report
        assert f"({report.sns_redeliveries} SNS redeliveries)" in str(report)
        again = [body for body, ids in seen.items() if len(ids) > 1]
        assert len(again) >= report.sns_redeliveries, seen
        for body in again:
            assert json.loads(body)["Type"] == "Notification"


def test_a_consumer_keyed_by_the_sqs_message_id_applies_snss_redelivery_twice() -> None:
    for seed in SEEDS:
        with pytest.raises(NotEffectivelyOnce, match=r"^applied twice: E-\d x\d") as raised:
            check(keyed_by_the_sqs_message_id, SNS, seed)
        assert "SNS redeliveries" in str(raised.value)


def test_a_body_that_is_no_sns_notification_is_sent_again_as_a_producer_retry() -> None:
    """Raw message delivery (the message itself in the body) has no notification to keep: the
    copy under a new id is the producer's retry, serialized again; a notification is kept."""
    from lambda_inbox_tools.testing.check.sources.retries import sns_notification_id

    notification = records(SNS, 1)[0]
    assert sns_notification_id(notification) == "n-E-0"
    assert sns_notification_id(records("sqs", 1)[0]) is None
    assert sns_notification_id(sqs_record('{"Type": "Notification"}')) is None
    report = check(transactional_inbox, "sqs", 0)
    assert report.new_ids >= 1 and report.sns_redeliveries == 0
    assert "SNS redeliveries" not in str(report)
