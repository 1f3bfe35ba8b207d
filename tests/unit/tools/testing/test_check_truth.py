"""What the effectively-once check plays so that its word holds both ways: faults at every write
position (`check.schedule`, the `lost` answer the SDK sends again), stale reads
(`check.stale`), order within a group, partition or key and none across them (`check.lanes`,
`check.queues`), and the structured report a failure carries. The zoo
(test_effectively_once_zoo.py) proves the consumers caught and passed; these pin the pieces."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from botocore.exceptions import ClientError

from devkit.zoo import BROKEN, CONTROLS, Ledger, check, records
from devkit.zoo_ledger import RUN
from devkit.zoo_mapping import Deployed
from lambda_inbox_tools.testing import (
    CheckClock,
    CrashSwitch,
    NotEffectivelyOnce,
    check_effectively_once,
    payload,
)
from lambda_inbox_tools.testing.check.dynamodb.stale import StaleReads
from lambda_inbox_tools.testing.check.schedule import owed_faults


def _stops(faults: Sequence[tuple[str, int]]) -> set[int]:
    """How many writes the invocation had made when each fault ended or failed it."""
    return {write if kind in ("after", "lost") else write - 1 for kind, write in faults}


@pytest.mark.parametrize("writes", [1, 2, 3, 4, 5])
def test_every_kind_falls_at_every_write_within_the_seeds_docs_testing_md_states(
    writes: int,
) -> None:
    kinds = ("after", "before", "error", "dynamodb", "lost")
    seen = {kind: set[int]() for kind in kinds}
    for seed in range(max(1, writes - 1)):
        faults = owed_faults(seed, writes)
        assert [f for f in faults if f[1] == 1] == [
            (k, 1) for k in ("error", "dynamodb", "before", "after", "lost")
        ]
        for kind, write in faults:
            seen[kind].add(write)
        if writes <= 5:  # every run stops an invocation between each two of a message's writes
            assert set(range(1, writes)) <= _stops(faults), (seed, faults)
    assert seen == {kind: set(range(1, writes + 1)) for kind in kinds}


def test_the_report_names_the_writes_each_fault_fell_at() -> None:
    report = check(CONTROLS["an audit item first, then one transaction"], "sqs", 1)
    assert report.writes_per_message == 2
    assert {
        kind: 1 in at and bool(at - {1}) for kind, at in report.positions.items()
    } == dict.fromkeys(("after", "before", "error", "dynamodb", "lost"), True), report
    assert "at writes (of 2 a message): after 1,2;" in str(report)


def _ledger_item(ledger: Ledger, sk: str) -> Any:
    found = ledger.dynamodb.get_item(
        TableName=ledger.table, Key={"pk": {"S": RUN}, "sk": {"S": sk}}, ConsistentRead=True
    )
    return found.get("Item")


def test_a_lost_answer_is_sent_again_as_the_sdk_retries() -> None:
    ledger = Ledger.in_memory()
    switch = CrashSwitch([ledger.dynamodb])
    try:
        switch.arm("lost", 1)
        ledger.apply("E-1")  # an ADD without a condition: applied twice
        assert ledger.effects()["E-1"] == 2 and switch.disarm()
        switch.arm("lost", 1)
        with pytest.raises(ClientError, match="ConditionalCheckFailed"):
            ledger.dynamodb.put_item(**ledger.mark("E-2"))  # its own first attempt landed
        assert _ledger_item(ledger, "INBOX#E-2") is not None
        switch.arm("lost", 1)
        actions = [{"Put": ledger.mark("E-3")}, {"Update": ledger.effect("E-3")}]
        ledger.dynamodb.transact_write_items(TransactItems=actions)  # the same token: once
        assert ledger.effects()["E-3"] == 1
    finally:
        switch.remove()


def test_an_eventually_consistent_read_may_miss_the_last_second_of_writes() -> None:
    ledger = Ledger.in_memory()
    clock = CheckClock()
    stale = StaleReads([ledger.dynamodb], clock)
    try:
        assert not ledger.marked("E-1", consistent=False)  # seen absent
        ledger.dynamodb.put_item(**ledger.mark("E-1"))
        stale.begin()
        assert ledger.marked("E-1")  # a strongly consistent read: never stale
        assert not ledger.marked("E-1", consistent=False)  # the copy that missed the write
        assert ledger.marked("E-1", consistent=False)  # caught up
        ledger.dynamodb.put_item(**ledger.mark("E-2", conditional=False))
        assert ledger.marked("E-2", consistent=False)  # never seen before the write: as it is
        assert not ledger.marked("E-3", consistent=False)
        ledger.dynamodb.put_item(**ledger.mark("E-3"))
        clock.advance(1.5)
        assert ledger.marked("E-3", consistent=False)  # a second later
        stale.end()
        assert not ledger.marked("E-4", consistent=False)
        ledger.dynamodb.put_item(**ledger.mark("E-4"))
        assert ledger.marked("E-4", consistent=False)  # outside an invocation: as it is
        assert stale.served == 1
    finally:
        stale.remove()


def test_a_batch_get_and_a_query_are_served_stale_too() -> None:
    ledger = Ledger.in_memory()
    stale = StaleReads([ledger.dynamodb], CheckClock())
    keys = [{"pk": {"S": RUN}, "sk": {"S": f"INBOX#E-{n}"}} for n in (1, 2)]

    def batch_get() -> list[str]:
        found = ledger.dynamodb.batch_get_item(RequestItems={ledger.table: {"Keys": keys}})
        return sorted(item["sk"]["S"] for item in found["Responses"][ledger.table])

    try:
        assert batch_get() == []
        ledger.dynamodb.put_item(**ledger.mark("E-1"))
        ledger.apply("E-1")
        stale.begin()
        assert batch_get() == []
        assert batch_get() == ["INBOX#E-1"]
        assert ledger.effects() == {"E-1": 1}  # a query sees the effect...
        ledger.apply("E-1")  # ... which changes
        assert ledger.effects() == {"E-1": 1}
        assert ledger.effects() == {"E-1": 2}
        assert stale.served == 2
    finally:
        stale.end()
        stale.remove()


def _first_records(consumer: Any, source: str, seed: int) -> tuple[int, list[str]]:
    """(batches that began across groups, the first event id of each invocation) of a run."""
    firsts: list[str] = []

    def watched(ledger: Ledger) -> Any:
        inner = consumer(ledger)

        def handler(event: dict[str, Any], context: Any) -> Any:
            batch = event.get("Records") or next(iter(event["records"].values()))
            firsts.append(payload(batch[0])["event_id"])
            return inner(event, context)

        return handler

    return check(watched, source, seed).across_lanes, firsts


def test_the_first_batch_begins_with_a_later_record_of_another_group() -> None:
    for source, seed in itertools.product(("sqs", "fifo", "kafka", "kinesis"), range(3)):
        across, firsts = _first_records(CONTROLS["transactional inbox"], source, seed)
        assert across == 1 and firsts[0] != "E-0", (source, seed, firsts)


def test_under_parallelization_factor_each_partition_key_is_a_lane_of_its_own() -> None:
    ledger = Ledger.in_memory()
    control = CONTROLS["a high-water mark per group, partition or key, ParallelizationFactor 2"]
    deployed = control(ledger)
    assert isinstance(deployed, Deployed)
    keys: list[set[str]] = []

    def handler(event: dict[str, Any], context: Any) -> Any:
        keys.append({r["kinesis"]["partitionKey"] for r in event["Records"]})
        return deployed(event, context)

    deployed_handler = Deployed(handler, deployed.spec)
    report = check_effectively_once(
        deployed_handler,
        records("kinesis", 12),
        effects=ledger.effects,
        key=lambda record: payload(record)["event_id"],
        clients=[ledger.dynamodb],
    )
    assert "ParallelizationFactor 2" in str(report.settings)
    assert all(len(batch) == 1 for batch in keys), keys
    with pytest.raises(NotEffectivelyOnce, match=r"^lost: E-"):
        check(BROKEN["a high-water mark per shard under ParallelizationFactor 2"], "kinesis", 0)


def test_a_failure_carries_the_structured_report() -> None:
    with pytest.raises(NotEffectivelyOnce) as raised:
        check(BROKEN["no inbox"], "sqs", 0)
    report = raised.value.report
    assert report.applied_twice and all(n > 1 for n in report.applied_twice.values())
    assert report.lost == [] and report.unexpected == [] and report.unfinished is None
    assert str(raised.value).startswith("applied twice: ")
    with pytest.raises(NotEffectivelyOnce) as raised:
        check(BROKEN["goes on after a failure in its group"], "fifo", 0)
    report = raised.value.report
    assert report.out_of_order and report.seed == 0
    assert report.problems[-1].startswith("acknowledged out of order: G-")
    with pytest.raises(NotEffectivelyOnce) as raised:
        check_effectively_once(
            lambda event, context: {"batchItemFailures": []},
            records("sqs"),
            effects=list,
            key=lambda record: payload(record)["event_id"],
            max_invocations=3,
        )
    assert raised.value.report.unfinished == "messages still unacknowledged after 3 invocations"
