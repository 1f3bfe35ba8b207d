"""Triage alone: known duplicates, poison, in-batch leaders and followers, ordering."""

from __future__ import annotations

from typing import cast

from lambda_inbox import ErrorCode, Outcome
from lambda_inbox._dead_letter.queue import DeadLettering
from lambda_inbox._errors import MissingMessageKey
from lambda_inbox._report import BatchReport, settled
from lambda_inbox._sources.identity import Delivery
from lambda_inbox._triage import Triage
from lambda_inbox.store import InboxRecord, Status
from tests.unit.consumer.fakes import FakeDeadLettering, delivery, report_for


def triage_for(*deliveries: Delivery) -> tuple[BatchReport, FakeDeadLettering, Triage]:
    report = report_for([d.message for d in deliveries])
    dead_letters = FakeDeadLettering()
    return report, dead_letters, Triage(report, cast(DeadLettering, dead_letters))


def admit(
    report: BatchReport, triage: Triage, delivery: Delivery, record: InboxRecord | None
) -> bool:
    """The pipeline's use of triage: record what it settles; True for a leader."""
    result = triage.settle_known(delivery, record)
    if result is not None:
        report.record(result)
        return False
    return triage.lead(delivery)


def completed(key: str, fingerprint: str | None) -> InboxRecord:
    return InboxRecord("c", key, Status.COMPLETED, fingerprint)


def outcomes(report: BatchReport) -> list[tuple[str, Outcome, str | None]]:
    return [(r.message.delivery_id, r.outcome, r.error_code) for r in report.results()]


def test_a_completed_record_makes_a_duplicate_and_a_different_payload_a_mismatch() -> None:
    same, changed = delivery("a", 0, key="k1", fingerprint="f1"), delivery("b", 1, key="k2")
    report, dead_letters, triage = triage_for(same, changed)
    assert not admit(report, triage, same, completed("k1", "f1"))
    assert not admit(report, triage, changed, completed("k2", "other"))
    assert outcomes(report) == [
        ("a", Outcome.DUPLICATE, None),
        ("b", Outcome.DEAD_LETTERED, ErrorCode.FINGERPRINT_MISMATCH),
    ]
    assert dead_letters.sent == [("k2", "fingerprint_mismatch", False)]  # keeps the COMPLETED


def test_poison_found_while_identifying_is_dead_lettered_and_failed_or_open_records_admit() -> None:
    poison = delivery("p", 0, poison=MissingMessageKey("no key"))
    retry = delivery("r", 1, key="k")
    report, dead_letters, triage = triage_for(poison, retry)
    assert not admit(report, triage, poison, None)
    assert admit(report, triage, retry, InboxRecord("c", "k", Status.FAILED))
    assert dead_letters.sent == [("p", "missing_key", True)]
    assert report.outcome_of(poison) is Outcome.DEAD_LETTERED


def test_followers_wait_for_their_leader_and_share_its_fate() -> None:
    leader = delivery("l", 0, key="k")
    same = delivery("s", 1, key="k")
    changed = delivery("c", 2, key="k", fingerprint="other")
    report, _, triage = triage_for(leader, same, changed)
    assert admit(report, triage, leader, None)
    assert not admit(report, triage, same, None)
    assert not admit(report, triage, changed, None)
    assert list(triage.settle_followers()) == []  # leader undecided: both wait
    report.record(settled(leader, Outcome.COMMITTED))
    report.record_all(triage.settle_followers())
    assert outcomes(report)[1:] == [
        ("s", Outcome.DUPLICATE, None),
        ("c", Outcome.DEAD_LETTERED, ErrorCode.FINGERPRINT_MISMATCH),
    ]


def test_a_follower_of_a_failed_leader_fails_and_a_fixed_payload_supersedes_poison() -> None:
    leader, follower = delivery("l", 0, key="k"), delivery("f", 1, key="k")
    report, _, triage = triage_for(leader, follower)
    admit(report, triage, leader, None)
    admit(report, triage, follower, None)
    report.record(settled(leader, Outcome.FAILED, "deadline"))
    report.record_all(triage.settle_followers(final=True))
    assert outcomes(report)[1] == ("f", Outcome.FAILED, ErrorCode.LEADER_FAILED)

    poison, fixed = delivery("p", 0, key="k"), delivery("x", 1, key="k", fingerprint="fixed")
    report, _, triage = triage_for(poison, fixed)
    assert admit(report, triage, poison, None)
    report.record(settled(poison, Outcome.DEAD_LETTERED, "invalid_payload"))
    assert admit(report, triage, fixed, None)  # processed on its own, as in a later batch


def test_followers_settle_one_at_a_time_so_a_failed_one_blocks_its_scope() -> None:
    leader = delivery("l", 0, key="k")
    first = delivery("f", 1, key="k", scope="p0")
    later = delivery("g", 2, key="k", scope="p0")
    report, _, triage = triage_for(leader, first, later)
    for each in (leader, first, later):
        admit(report, triage, each, None)
    report.record(settled(leader, Outcome.FAILED, "deadline"))
    report.record_all(triage.settle_followers())
    assert outcomes(report)[1:] == [
        ("f", Outcome.FAILED, ErrorCode.LEADER_FAILED),
        ("g", Outcome.SKIPPED, None),
    ]


def test_a_record_after_a_failure_in_its_scope_is_skipped_before_anything_else() -> None:
    failed, later = delivery("a", 0, scope="p0"), delivery("b", 1, scope="p0", key="k")
    report, _, triage = triage_for(failed, later)
    report.record(settled(failed, Outcome.FAILED))
    assert not admit(report, triage, later, completed("k", "fp"))
    assert report.outcome_of(later) is Outcome.SKIPPED
