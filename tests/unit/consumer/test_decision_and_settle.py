"""Deciding and classifying alone: handler outcomes, and one verdict per message per attempt."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from lambda_inbox import ErrorCode, PoisonMessage, UnitOfWork
from lambda_inbox._commit.actions import ConditionFailures
from lambda_inbox._commit.decision import Decider, Decision
from lambda_inbox._commit.send import CommitAttempt, CommitStatus
from lambda_inbox._commit.settle import INBOX_ACTION, VerdictKind, settle
from lambda_inbox._errors import HandlerFailed, InvalidPayload
from lambda_inbox._sources.identity import Delivery
from lambda_inbox.store._attribute_values import item_identity
from tests.unit.consumer.fakes import delivery, msg


class Credit(BaseModel):
    account: str
    amount: int


def credit(payload: Credit, uow: UnitOfWork) -> None:
    uow.update("t", {"pk": payload.account, "sk": "B"}, "ADD b :a", values={":a": payload.amount})


def decider(decide: Any = credit, on_condition_failed: Any = None) -> Decider[Credit]:
    return Decider(
        parse=Credit.model_validate,
        decide=decide,
        on_condition_failed=on_condition_failed,
        key_attributes=("pk", "sk"),
        inbox_item=lambda key: item_identity("inbox", {"pk": key}),
    )


def with_body(body: str) -> Delivery:
    return Delivery(msg("m", 0, body=body), "k", "fp")


def test_a_decision_names_every_item_it_touches() -> None:
    decision = decider().decide(with_body('{"account": "a", "amount": 5}'))
    inbox = item_identity("inbox", {"pk": "k"})
    assert decision.items == {inbox, item_identity("t", {"pk": "a", "sk": "B"})}
    assert decision.action_count == 2


@pytest.mark.parametrize(
    ("body", "error", "code"),
    [
        ('{"account": "a"}', InvalidPayload, ErrorCode.INVALID_PAYLOAD),
        ("{not json", PoisonMessage, ErrorCode.MALFORMED_JSON),
        ("[" * 100_000 + "]" * 100_000, PoisonMessage, ErrorCode.MALFORMED_JSON),
    ],
)
def test_unreadable_payloads_are_poison(body: str, error: type[Exception], code: str) -> None:
    with pytest.raises(error) as raised:
        decider().decide(with_body(body))
    assert isinstance(raised.value, PoisonMessage) and raised.value.code == code


def test_handler_errors_are_failures_and_bad_writes_are_poison() -> None:
    def broken(payload: Credit, uow: UnitOfWork) -> None:
        raise RuntimeError("downstream down")

    def bad_writes(payload: Credit, uow: UnitOfWork) -> None:
        uow.put("t", {"pk": "a", "sk": "b", "x": 1.5})

    body = '{"account": "a", "amount": 5}'
    with pytest.raises(HandlerFailed, match="downstream down"):
        decider(broken).decide(with_body(body))
    with pytest.raises(PoisonMessage) as raised:
        decider(bad_writes).decide(with_body(body))
    assert raised.value.code == ErrorCode.INVALID_WRITES


def test_redeciding_replaces_the_writes_or_is_poison_without_a_handler() -> None:
    def reject(payload: Credit, failed: ConditionFailures, uow: UnitOfWork) -> None:
        uow.put("t", {"pk": "a", "sk": "REJECTED"})

    decision = decider(on_condition_failed=reject).decide(
        with_body('{"account": "a", "amount": 1}')
    )
    before = decision.items
    decider(on_condition_failed=reject).redecide(decision, ConditionFailures(()))
    assert decision.rounds == 1 and decision.items != before
    with pytest.raises(PoisonMessage) as raised:
        decider().redecide(decision, ConditionFailures(()))
    assert raised.value.code == ErrorCode.CONDITION_FAILED


def two_decisions() -> tuple[list[Decision[Credit]], list[tuple[int, int]]]:
    made = [
        decider().decide(
            Delivery(msg(f"m{i}", i, body=f'{{"account": "a{i}", "amount": 1}}'), f"k{i}", "fp")
        )
        for i in range(2)
    ]
    owners = [(0, INBOX_ACTION), (0, 0), (1, INBOX_ACTION), (1, 0)]
    return made, owners


def cancelled(*codes: str, item: dict[str, Any] | None = None) -> CommitAttempt:
    reasons = tuple(
        {"Code": code, "Message": "m", "Item": item if code != "None" else None} for code in codes
    )
    return CommitAttempt(CommitStatus.CANCELLED, reasons, "TransactionCanceledException")


def kinds(attempt: CommitAttempt) -> list[str]:
    decisions, owners = two_decisions()
    return [v.kind for v in settle(attempt, [d.actions for d in decisions], owners)]


def test_whole_request_statuses_apply_to_every_message() -> None:
    assert kinds(CommitAttempt(CommitStatus.COMMITTED)) == [VerdictKind.COMMITTED] * 2
    assert kinds(CommitAttempt(CommitStatus.TRANSIENT)) == [VerdictKind.TRANSIENT] * 2
    assert kinds(CommitAttempt(CommitStatus.UNAVAILABLE)) == [VerdictKind.UNAVAILABLE] * 2
    assert kinds(CommitAttempt(CommitStatus.REJECTED)) == [VerdictKind.SPLIT] * 2
    assert kinds(cancelled("None", "None", "None", "None")) == [VerdictKind.TRANSIENT] * 2


def test_cancellation_reasons_are_attributed_to_their_message() -> None:
    stored = {"status": {"S": "COMPLETED"}, "fingerprint": {"S": "fp"}}
    assert kinds(cancelled("ConditionalCheckFailed", "None", "None", "None", item=stored)) == [
        VerdictKind.INBOX_TAKEN,
        VerdictKind.BYSTANDER,
    ]
    assert kinds(cancelled("None", "None", "None", "ConditionalCheckFailed")) == [
        VerdictKind.BYSTANDER,
        VerdictKind.CONDITION_FAILED,
    ]
    assert kinds(cancelled("None", "TransactionConflict", "None", "ValidationError")) == [
        VerdictKind.TRANSIENT,
        VerdictKind.REJECTED,
    ]


def test_a_failed_domain_condition_carries_the_action_and_the_current_item() -> None:
    decisions, owners = two_decisions()
    attempt = cancelled("None", "ConditionalCheckFailed", "None", "None", item={"b": {"N": "3"}})
    verdict = settle(attempt, [d.actions for d in decisions], owners)[0]
    assert verdict.failures is not None
    (failure,) = verdict.failures
    assert failure.action is decisions[0].actions[0]
    assert failure.item == {"b": 3}


def test_a_delivery_already_known_to_be_poison_is_not_parsed_again() -> None:
    poison = delivery("p", 0, poison=PoisonMessage("no", code="missing_key"))
    with pytest.raises(PoisonMessage, match="no"):
        decider().decide(poison)
