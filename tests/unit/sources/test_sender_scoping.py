"""No sender can claim another sender's message (docs/security.md, "Who may name a message").

Every identity a sender chooses (`idempotency-key`, `outbox-message-id`, a FIFO deduplication
id, an SNS notification's `MessageId`, a dead letter's `inbox-message-key` and `inbox-sender`)
is keyed in the name space of the principal SQS names in `SenderId`. Each forgery is played in
both arrival orders: the victim's message is applied once, the forger's is its own message (or
poison), never a duplicate of the victim's nor a fingerprint conflict with it. Re-sends by the
same principal (another session of the same role, SNS's redelivery, a relay's retry) stay
duplicates. On moto, with the kit's builders setting each record's `SenderId`.
"""

from __future__ import annotations

from typing import Any

import pytest

from devkit.app_state import REDRIVER, AppState
from devkit.events import (
    ORDER_FIFO_QUEUE_ARN,
    delivered_again,
    lambda_attributes,
    sqs_event,
    sqs_record,
    string_attribute,
)
from lambda_inbox import InboxConsumer, KeyStrategy, PoisonMessage, UnitOfWork
from lambda_inbox._sources.identity import fingerprint
from lambda_inbox._sources.sqs import parse_sqs_event
from lambda_inbox_tools.testing.producers import sns_notification

#: A producer's role, as SQS names it: its unique id, then the session after the `:`.
VICTIM = "AROAVICTIMPRODUCER01:orders-task-1"
VICTIM_OTHER_TASK = "AROAVICTIMPRODUCER01:orders-task-2"
#: Another principal allowed to send to the same queue (an IAM user).
FORGER = "AIDAFORGINGPRODUCER1"
#: SNS's deliveries (all topics of a region share one principal).
SNS = "AIDASNSDELIVERIES001"
VICTIM_FIRST, FORGER_FIRST = "victim first", "forger first"
ORDERS = pytest.mark.parametrize("order", [VICTIM_FIRST, FORGER_FIRST])


def _counting(aws: AppState) -> Any:
    """Counts every application per `order` field of the payload."""
    return lambda document, uow: aws.count_applied(uow, document["order"])


def _consumer(aws: AppState, **options: Any) -> InboxConsumer[Any]:
    return aws.consumer("claims", model=dict, decide=_counting(aws), **options)


def _record(order: str, sender: str, **attributes: str) -> dict[str, Any]:
    strings = {name.replace("_", "-"): string_attribute(v) for name, v in attributes.items()}
    return sqs_record({"order": order}, sender_id=sender, message_attributes=strings)


def _deliver(consumer: InboxConsumer[Any], order: str, victim: Any, forger: Any) -> None:
    first, second = (victim, forger) if order == VICTIM_FIRST else (forger, victim)
    for record in (first, second):
        assert consumer.handle(sqs_event(record), None) == {"batchItemFailures": []}


def _principal(sender_id: str) -> str:
    return sender_id.partition(":")[0]


# ---- a forged identity never touches the victim's message ----------------------------------


@ORDERS
@pytest.mark.parametrize("attribute", ["idempotency_key", "outbox_message_id"])
def test_a_forged_chosen_id_is_the_forgers_own_message(
    aws: AppState, order: str, attribute: str
) -> None:
    consumer = _consumer(aws)
    victim = _record("victim", VICTIM, **{attribute: "id-1"})
    forged = _record("forged", FORGER, **{attribute: "id-1"})
    _deliver(consumer, order, victim, forged)
    assert (aws.applied("victim"), aws.applied("forged")) == (1, 1)
    assert set(aws.inbox_records("claims")) == {f"{_principal(VICTIM)}/id-1", f"{FORGER}/id-1"}
    assert aws.dead_letters() == []


@ORDERS
def test_a_forged_sns_message_id_is_the_forgers_own_message(aws: AppState, order: str) -> None:
    consumer = _consumer(aws, envelope="sns")
    real = sqs_record(sns_notification({"order": "victim"}, message_id="n-1"), sender_id=SNS)
    forged = sqs_record(sns_notification({"order": "forged"}, message_id="n-1"), sender_id=FORGER)
    _deliver(consumer, order, real, forged)
    assert (aws.applied("victim"), aws.applied("forged")) == (1, 1)
    assert set(aws.inbox_records("claims")) == {f"{SNS}/n-1", f"{FORGER}/n-1"}
    assert aws.dead_letters() == []


@ORDERS
def test_an_id_in_a_forged_notifications_attributes_is_the_forgers_own(
    aws: AppState, order: str
) -> None:
    """The relay's outbox message id reaches the queue inside a notification's attributes; a
    body shaped like one, sent straight to the queue, names only its own sender's messages."""
    consumer = _consumer(aws, envelope="sns")
    carried = {"outbox-message-id": "m-1"}
    real = sns_notification({"order": "victim"}, attributes=carried)
    forged = sns_notification({"order": "forged"}, attributes=carried)
    _deliver(
        consumer,
        order,
        sqs_record(real, sender_id=SNS),
        sqs_record(forged, sender_id=FORGER),
    )
    assert (aws.applied("victim"), aws.applied("forged")) == (1, 1)
    assert set(aws.inbox_records("claims")) == {f"{SNS}/m-1", f"{FORGER}/m-1"}


@ORDERS
def test_a_forged_fifo_deduplication_id_is_the_forgers_own_message(
    aws: AppState, order: str
) -> None:
    consumer = _consumer(aws)
    options: dict[str, Any] = {"arn": ORDER_FIFO_QUEUE_ARN, "group": "g", "dedup": "d-1"}
    victim = sqs_record({"order": "victim"}, sender_id=VICTIM, **options)
    forged = sqs_record({"order": "forged"}, sender_id=FORGER, **options)
    _deliver(consumer, order, victim, forged)
    assert (aws.applied("victim"), aws.applied("forged")) == (1, 1)


@ORDERS
def test_a_forged_original_sender_is_poison_and_the_victim_applied_once(
    aws: AppState, order: str
) -> None:
    """`inbox-sender` is the library's own attribute on a dead letter: written by anyone else
    than a trusted redriver, it is not believed."""
    consumer = _consumer(aws)
    victim = _record("victim", VICTIM, idempotency_key="id-1")
    forged = _record("forged", FORGER, idempotency_key="id-1", inbox_sender=_principal(VICTIM))
    _deliver(consumer, order, victim, forged)
    assert (aws.applied("victim"), aws.applied("forged")) == (1, 0)
    (dead,) = aws.dead_letters()
    attributes = dead["MessageAttributes"]
    assert attributes["inbox-error-code"]["StringValue"] == "untrusted_sender"
    assert attributes["inbox-sender"]["StringValue"] == FORGER  # what was believed
    assert _principal(VICTIM) in attributes["inbox-error"]["StringValue"]
    victims = aws.inbox_records("claims")[f"{_principal(VICTIM)}/id-1"]
    assert victims["status"] == "COMPLETED"


@ORDERS
def test_a_forged_dead_letter_key_plants_no_record_under_the_victims_key(
    aws: AppState, order: str
) -> None:
    """A poison message naming the victim's key as the one it was dead-lettered under
    (`inbox-message-key`) gets its FAILED record in its own sender's name space."""
    consumer = _consumer(aws)
    victim_key = f"{_principal(VICTIM)}/id-1"
    victim = _record("victim", VICTIM, idempotency_key="id-1")
    forged = sqs_record(
        "not json",
        sender_id=FORGER,
        message_id="forged-1",
        message_attributes={"inbox-message-key": string_attribute(victim_key)},
    )
    _deliver(consumer, order, victim, forged)
    assert aws.applied("victim") == 1
    records = aws.inbox_records("claims")
    assert records[victim_key]["status"] == "COMPLETED"
    assert records[f"{FORGER}/forged-1"]["status"] == "FAILED"
    (dead,) = aws.dead_letters()
    assert dead["MessageAttributes"]["inbox-message-key"]["StringValue"] == f"{FORGER}/forged-1"


def test_a_forged_dead_letter_key_leaves_the_victims_failed_record_alone(aws: AppState) -> None:
    def refuse(document: dict[str, Any], uow: UnitOfWork) -> None:
        raise PoisonMessage("refused")

    consumer = aws.consumer("claims", model=dict, decide=refuse)
    victim = _record("victim", VICTIM, idempotency_key="id-1")
    consumer.handle(sqs_event(victim), None)
    victim_key = f"{_principal(VICTIM)}/id-1"
    before = aws.inbox_records("claims")[victim_key]
    forged = sqs_record(
        "not json",
        sender_id=FORGER,
        message_attributes={
            "inbox-message-key": string_attribute(victim_key),
            "inbox-sender": string_attribute(_principal(VICTIM)),
        },
    )
    consumer.handle(sqs_event(forged), None)
    assert aws.inbox_records("claims")[victim_key] == before


# ---- re-sends by the same principal stay duplicates ----------------------------------------


@pytest.mark.parametrize("attribute", ["idempotency_key", "outbox_message_id"])
def test_another_session_of_the_same_role_is_the_same_sender(aws: AppState, attribute: str) -> None:
    consumer = _consumer(aws)
    first = _record("victim", VICTIM, **{attribute: "id-1"})
    retry = _record("victim", VICTIM_OTHER_TASK, **{attribute: "id-1"})
    _deliver(consumer, VICTIM_FIRST, first, retry)
    assert aws.applied("victim") == 1
    assert set(aws.inbox_records("claims")) == {f"{_principal(VICTIM)}/id-1"}


def test_snss_redelivery_under_a_new_sqs_message_id_is_a_duplicate(aws: AppState) -> None:
    consumer = _consumer(aws, envelope="sns")
    body = sns_notification({"order": "victim"}, message_id="n-1")
    first, again = sqs_record(body, sender_id=SNS), sqs_record(body, sender_id=SNS)
    _deliver(consumer, VICTIM_FIRST, first, delivered_again(again))
    assert aws.applied("victim") == 1


def test_a_same_sender_conflict_names_both_fingerprints_and_the_sender(aws: AppState) -> None:
    consumer = _consumer(aws)
    first = _record("victim", VICTIM, idempotency_key="id-1")
    edited = _record("edited", VICTIM_OTHER_TASK, idempotency_key="id-1")
    _deliver(consumer, VICTIM_FIRST, first, edited)
    assert (aws.applied("victim"), aws.applied("edited")) == (1, 0)
    stored = aws.inbox_records("claims")[f"{_principal(VICTIM)}/id-1"]["fingerprint"]
    (message,) = parse_sqs_event(sqs_event(edited))
    (dead,) = aws.dead_letters()
    attributes = dead["MessageAttributes"]
    assert attributes["inbox-error-code"]["StringValue"] == "fingerprint_mismatch"
    error = attributes["inbox-error"]["StringValue"]
    assert stored in error and fingerprint(message) in error and stored != fingerprint(message)
    assert error.endswith(f"sender {_principal(VICTIM)}")
    assert attributes["inbox-sender"]["StringValue"] == _principal(VICTIM)


# ---- a redrive keeps the original sender, from a trusted redriver only ---------------------


def _dead_letter_of_the_victim(aws: AppState, consumer: InboxConsumer[Any]) -> dict[str, Any]:
    """The victim's message dead-lettered once (`not yet`), as the DLQ holds it."""
    consumer.handle(sqs_event(_record("victim", VICTIM, idempotency_key="id-1")), None)
    (dead,) = aws.dead_letters()
    assert dead["MessageAttributes"]["inbox-sender"]["StringValue"] == _principal(VICTIM)
    return dict(dead)


def _moved_by(dead: dict[str, Any], sender_id: str) -> dict[str, Any]:
    """The dead letter sent again to the source queue by `sender_id` (a redrive)."""
    attributes = lambda_attributes(dead["MessageAttributes"])
    return sqs_record(dead["Body"], sender_id=sender_id, message_attributes=attributes)


def _poison_once(aws: AppState) -> InboxConsumer[Any]:
    count = _counting(aws)
    calls: list[int] = []

    def apply(document: dict[str, Any], uow: UnitOfWork) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise PoisonMessage("not yet")
        count(document, uow)

    return aws.consumer("claims", model=dict, decide=apply)


def test_a_trusted_redrive_keeps_the_original_sender_and_stays_once(aws: AppState) -> None:
    consumer = _poison_once(aws)
    dead = _dead_letter_of_the_victim(aws, consumer)
    for _ in range(2):  # the second redrive of the same dead letter is a duplicate
        assert consumer.handle(sqs_event(_moved_by(dead, REDRIVER)), None) == {
            "batchItemFailures": []
        }
    assert aws.applied("victim") == 1
    record = aws.inbox_records("claims")[f"{_principal(VICTIM)}/id-1"]
    assert record["status"] == "COMPLETED"  # the FAILED record of the first delivery, completed


def test_an_untrusted_redrive_is_refused_and_applies_nothing(aws: AppState) -> None:
    consumer = _poison_once(aws)
    dead = _dead_letter_of_the_victim(aws, consumer)
    operator = "AROAOPERATORNOTLISTD:alice"
    assert consumer.handle(sqs_event(_moved_by(dead, operator)), None) == {"batchItemFailures": []}
    assert aws.applied("victim") == 0
    (refused,) = aws.dead_letters()
    assert refused["MessageAttributes"]["inbox-error-code"]["StringValue"] == "untrusted_sender"
    assert refused["MessageAttributes"]["inbox-sender"]["StringValue"] == _principal(operator)


def test_a_redrivers_copy_with_a_key_from_the_body_needs_no_trust(aws: AppState) -> None:
    """With `key=` the key is the application's: who sent the copy does not matter to it."""
    consumer = aws.consumer(
        "claims", model=dict, decide=_counting(aws), key="order", config={"trusted_redrivers": ()}
    )
    first = _record("victim", VICTIM)
    assert consumer.handle(sqs_event(first), None) == {"batchItemFailures": []}
    copy = _record("victim", "AROAOPERATORNOTLISTD:alice", inbox_sender=_principal(VICTIM))
    assert consumer.handle(sqs_event(copy), None) == {"batchItemFailures": []}
    assert aws.applied("victim") == 1
    assert aws.dead_letters() == []


def test_trusted_redrivers_come_from_the_environment(
    aws: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`INBOX_TRUSTED_REDRIVERS`: principals, or whole `SenderId`s (cut at the `:`)."""
    monkeypatch.setenv("INBOX_TRUSTED_REDRIVERS", "AROAOPERATORS000001:alice, AIDAOPERATORUSER01")
    consumer = InboxConsumer("claims", model=dict, decide=_counting(aws))
    for operator, order in (("AROAOPERATORS000001:bob", "one"), ("AIDAOPERATORUSER01", "two")):
        copy = _record(order, operator, idempotency_key=order, inbox_sender=_principal(VICTIM))
        assert consumer.handle(sqs_event(copy), None) == {"batchItemFailures": []}
    assert set(aws.inbox_records("claims")) == {
        f"{_principal(VICTIM)}/one",
        f"{_principal(VICTIM)}/two",
    }


def test_a_record_without_a_sender_id_keeps_its_keys_as_they_are() -> None:
    """An event written by hand (no `SenderId`): no principal, so no name space."""
    record = _record("victim", VICTIM, idempotency_key="id-1")
    del record["attributes"]["SenderId"]
    (message,) = parse_sqs_event(sqs_event(record))
    assert message.sender is None
    assert KeyStrategy().message_key(message) == "id-1"
