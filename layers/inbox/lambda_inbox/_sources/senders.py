"""Who sent an SQS message, and whose name space the identities a sender chooses live in
(docs/security.md, "Who may name a message").

SQS sets `attributes.SenderId` on every message and no sender can choose it: an IAM user's unique
id (`AIDA...`), or a role's unique id and its session (`AROA...:session`). The *principal* is
the part before the first `:`, so every session of one role (every task, every Lambda execution
environment of it, every retry) is one principal, and so are all of SNS's deliveries of a region.
An identity a sender chooses (the `idempotency-key` and `outbox-message-id` attributes, a FIFO
`MessageDeduplicationId`, an envelope's `MessageId` or `id`) and the SQS `messageId` are keyed
`<principal>/<id>`: one principal can never name another's message.

A dead letter names the principal its message came from in `inbox-sender`, which the library
writes (`(none)` for a message of a source without senders, Kafka, Kinesis or DynamoDB Streams:
sent again through SQS, their records keep their own keys). Sent again (SQS's move task,
`lambda-inbox redrive`), the message's `SenderId` is whoever moved it. Anybody could write that
attribute, so it is believed only when the message's own sender is one of the consumer's
trusted redrivers (`InboxConfig.trusted_redrivers`, `INBOX_TRUSTED_REDRIVERS`), or when it names
the sender itself. A claim from anyone else is kept on the message (`InboundMessage.sender_claim`)
and makes the message poison `untrusted_sender` wherever its identity would depend on it.

A record without `SenderId` (an event written by hand, an invocation that did not come from
SQS) has no principal: its identities stay as they are, and its claims are believed (whoever
may invoke the function may say anything).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: Dead-letter attribute: the principal the message's identity belonged to.
ORIGINAL_SENDER_ATTRIBUTE = "inbox-sender"
#: Its value for a message of no sender (a Kafka or stream record; a reaper's dead letter).
NO_SENDER = "(none)"


def principal(sender_id: object) -> str | None:
    """The principal of a `SenderId` (`AROA...:session` -> `AROA...`); None without one."""
    if type(sender_id) is not str or not sender_id:
        return None
    return sender_id.partition(":")[0] or None


def principals(ids: Iterable[str]) -> frozenset[str]:
    """The principals of `ids` (unique ids, or whole `SenderId`s), blanks left out."""
    return frozenset(found for text in ids if (found := principal(text.strip())) is not None)


def sender_of(
    sender_id: object, strings: Mapping[str, str], redrivers: frozenset[str]
) -> tuple[str | None, str | None]:
    """The principal a message's identities belong to and the claim that was not believed
    (None when there was none): `inbox-sender` from a trusted redriver (or naming the sender
    itself, or on a record without `SenderId`) is the sender; from anyone else it is refused."""
    sender = principal(sender_id)
    claimed = strings.get(ORIGINAL_SENDER_ATTRIBUTE) if strings else None
    if claimed is None or claimed == sender:
        return sender, None
    if sender is None or sender in redrivers:
        return (None if claimed == NO_SENDER else claimed or None), None
    return sender, claimed


def scoped(sender: str | None, key: str) -> str:
    """`key` in `sender`'s name space: `<principal>/<key>` (as it is without a sender)."""
    return key if sender is None else f"{sender}/{key}"


def untrusted_reason(sender: str | None, claimed: str) -> str:
    """Why a message whose claim was not believed is poison."""
    return (
        f"the message names {claimed} as its original sender ({ORIGINAL_SENDER_ATTRIBUTE}), but "
        f"its sender {sender} is not a trusted redriver (INBOX_TRUSTED_REDRIVERS): "
        "redrive it as one, or have its original sender send it again"
    )
