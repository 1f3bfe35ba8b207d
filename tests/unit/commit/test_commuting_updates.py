"""Commuting updates: which updates commute, how they merge, how the planner and settle treat
a merged action."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

import pytest

from lambda_inbox import UnitOfWorkError
from lambda_inbox._commit.actions import WriteAction, merge_commuting
from lambda_inbox._commit.planner import chunk_wave, plan_waves
from lambda_inbox._commit.send import CommitAttempt, CommitStatus
from lambda_inbox._commit.settle import INBOX_ACTION, VerdictKind, settle
from lambda_inbox._commit.unit_of_work import UnitOfWork

KEY = {"pk": "CUSTOMER#c", "sk": "BALANCE"}
ADD = "ADD balance_cents :amount, payments :one"


def balance_update(amount: object = 5, **options: object) -> WriteAction:
    uow = UnitOfWork()
    uow.update("t", KEY, ADD, values={":amount": amount, ":one": 1}, **options)  # type: ignore[arg-type]
    return uow.actions[0]


# ---------------------------------------------------------------------------- the rule


def test_an_add_of_numbers_without_condition_commutes() -> None:
    assert balance_update().commutes
    assert balance_update(Decimal("-2.5")).merge_shape is not None
    uow = UnitOfWork()
    uow.update("t", KEY, "add #n.total :v", names={"#n": "stats"}, values={":v": 1})
    assert uow.actions[0].commutes


@pytest.mark.parametrize(
    ("expression", "options"),
    [
        (ADD, {"condition": "attribute_exists(pk)"}),  # a conditional ADD
        ("SET balance_cents = :amount, payments = :one", {}),
        ("ADD balance_cents :amount SET payments = :one", {}),
        ("ADD balance_cents :amount REMOVE flag, payments :one", {}),
    ],
)
def test_anything_else_does_not_commute(expression: str, options: dict[str, str]) -> None:
    uow = UnitOfWork()
    values = {":amount": 5, ":one": 1}
    uow.update("t", KEY, expression, values=values, **options)  # type: ignore[arg-type]
    assert not uow.actions[0].commutes and uow.actions[0].merge_shape is None


def test_an_add_to_a_set_does_not_commute_here() -> None:
    uow = UnitOfWork()
    uow.update("t", KEY, "ADD tags :t", values={":t": {"a"}})
    assert not uow.actions[0].commutes


def test_puts_deletes_and_checks_never_commute() -> None:
    uow = UnitOfWork()
    uow.put("t", {"pk": "a", "sk": "b"})
    uow.delete("t", {"pk": "c", "sk": "d"})
    uow.condition_check("t", {"pk": "e", "sk": "f"}, "attribute_exists(pk)")
    assert [action.commutes for action in uow.actions] == [False, False, False]


def test_commutes_false_opts_out_and_commutes_true_is_checked() -> None:
    assert not balance_update(commutes=False).commutes
    assert balance_update(commutes=True).commutes
    uow = UnitOfWork()
    with pytest.raises(UnitOfWorkError, match="commutes=True, but it has a condition"):
        uow.update(
            "t", KEY, ADD, values={":amount": 1, ":one": 1}, condition="x > :one", commutes=True
        )
    with pytest.raises(UnitOfWorkError, match="commutes=True, but its expression"):
        uow.update("t", KEY, "SET a = :one", values={":one": 1}, commutes=True)
    assert uow.actions == ()  # nothing half-added


def test_the_merge_shape_is_the_expression_and_its_names() -> None:
    assert balance_update(1).merge_shape == balance_update(99).merge_shape
    uow = UnitOfWork()
    uow.update(
        "t", KEY, "ADD payments :one, balance_cents :amount", values={":amount": 1, ":one": 1}
    )
    assert uow.actions[0].merge_shape != balance_update().merge_shape


# ---------------------------------------------------------------------------- merging


def test_merged_values_are_exact_sums_per_placeholder() -> None:
    first = balance_update(10**37)
    merged = merge_commuting(first.transact_item(), balance_update(10**37 + 1))
    merged = merge_commuting(merged, balance_update(Decimal("-0.5")))
    update = merged["Update"]
    assert update["UpdateExpression"] == ADD
    assert update["Key"] == first.request["Key"]
    assert update["ExpressionAttributeValues"] == {
        ":amount": {"N": str(2 * 10**37) + ".5"},
        ":one": {"N": "3"},
    }
    assert first.request["ExpressionAttributeValues"][":one"] == {"N": "1"}  # not mutated


def test_a_non_commuting_update_is_never_merged() -> None:
    with pytest.raises(UnitOfWorkError, match="does not commute"):
        merge_commuting(balance_update().transact_item(), balance_update(commutes=False))


# ---------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class W:
    name: str
    items: frozenset[str]
    commuting_items: dict[str, str] = field(default_factory=dict)
    action_count: int = 3
    size: int = 1024


def w(name: str, *exclusive: str, add: tuple[str, ...] = (), shape: str = "add") -> W:
    commuting = {item: shape for item in add}
    # The first exclusive item stands for the inbox record: one action per item.
    return W(name, frozenset([*exclusive, *add]), commuting, len(exclusive) + len(add))


def names(groups: list[list[W]]) -> list[list[str]]:
    return [[work.name for work in group] for group in groups]


def test_commuting_updates_of_a_hot_item_share_a_wave() -> None:
    pending = [w(f"m{n}", f"inbox{n}", f"pay{n}", add=(f"B{n % 2}",)) for n in range(6)]
    assert names(plan_waves(pending)) == [[f"m{n}" for n in range(6)]]


def test_non_commuting_touches_keep_their_order_around_commuting_ones() -> None:
    pending = [
        w("a1", "i1", add=("B",)),
        w("a2", "i2", add=("B",)),
        w("set", "i3", "B"),  # after both ADDs
        w("a3", "i4", add=("B",)),  # after the SET, not with a1/a2
        w("a4", "i5", add=("B",)),  # joins a3
        w("other", "i6", add=("B",), shape="other"),  # another shape: after a3/a4
    ]
    assert names(plan_waves(pending)) == [["a1", "a2"], ["set"], ["a3", "a4"], ["other"]]


def test_a_commuting_update_may_join_an_earlier_wave_of_its_run() -> None:
    pending = [
        w("a1", "i1", add=("B",)),
        w("x1", "i2", "X"),
        w("x2", "i3", "X", add=("B",)),  # wave 1 because of X
        w("a2", "i4", add=("B",)),  # commutes with a1 and x2: wave 0
    ]
    assert names(plan_waves(pending)) == [["a1", "x1", "a2"], ["x2"]]


def test_a_merged_update_counts_once_against_the_action_limit() -> None:
    wave = [w(f"m{n}", f"inbox{n}", f"pay{n}", add=("B",)) for n in range(60)]
    chunks = chunk_wave(wave, max_actions=100, max_messages=100)
    assert [len(chunk) for chunk in chunks] == [49, 11]  # 49 * 2 + 1 merged = 99 actions


def test_a_shape_clash_in_one_wave_starts_a_new_transaction() -> None:
    wave = [w("a", "i1", add=("B",)), w("b", "i2", add=("B",), shape="other"), w("c", "i3", "B")]
    assert names(chunk_wave(wave, max_actions=100, max_messages=100)) == [["a"], ["b"], ["c"]]


# ---------------------------------------------------------------------------- settling

# Two messages: inbox put, payment put, and one merged balance update (transact item 4).
OWNERS = [(0, INBOX_ACTION), (0, 0), (1, INBOX_ACTION), (1, 0), (0, 1)]
SHARED = {4: [(0, 1), (1, 1)]}


def actions() -> list[tuple[WriteAction, ...]]:
    made = []
    for n in range(2):
        uow = UnitOfWork()
        uow.put(
            "t", {"pk": "CUSTOMER#c", "sk": f"PAYMENT#{n}"}, condition="attribute_not_exists(pk)"
        )
        uow.update("t", KEY, ADD, values={":amount": n + 1, ":one": 1})
        made.append(uow.actions)
    return made


def kinds(*codes: str) -> list[str]:
    attempt = CommitAttempt(
        CommitStatus.CANCELLED, tuple({"Code": code} for code in codes), "cancelled"
    )
    return [verdict.kind for verdict in settle(attempt, actions(), OWNERS, SHARED)]


def test_a_refused_merged_update_sends_every_owner_alone() -> None:
    assert kinds("None", "None", "None", "None", "ValidationError") == [VerdictKind.SPLIT] * 2


def test_a_transient_reason_on_a_merged_update_reaches_every_owner() -> None:
    assert kinds("None", "None", "None", "None", "ThrottlingError") == [VerdictKind.TRANSIENT] * 2


def test_a_message_own_condition_is_still_its_own() -> None:
    verdicts = kinds("None", "None", "None", "ConditionalCheckFailed", "None")
    assert verdicts == [VerdictKind.BYSTANDER, VerdictKind.CONDITION_FAILED]
    attempt = CommitAttempt(
        CommitStatus.CANCELLED,
        tuple({"Code": c} for c in ("None", "None", "None", "ConditionalCheckFailed", "None")),
        "cancelled",
    )
    failed = settle(attempt, actions(), OWNERS, SHARED)[1].failures
    assert failed is not None and [f.action.kind for f in failed] == ["Put"]


def test_an_inbox_condition_wins_over_a_merged_refusal() -> None:
    verdicts = kinds("ConditionalCheckFailed", "None", "None", "None", "ValidationError")
    assert verdicts == [VerdictKind.INBOX_TAKEN, VerdictKind.SPLIT]
