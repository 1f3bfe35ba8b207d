"""Classify: what one commit attempt means for each message of its transaction.

Pure: from the attempt's status and `CancellationReasons` (one per action, in order) to one
`Verdict` per message. The committer acts on the verdicts; nothing here talks to DynamoDB.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lambda_inbox._commit.actions import ConditionFailures, FailedCondition, WriteAction
from lambda_inbox._commit.send import (
    REJECTED_REASONS,
    TRANSIENT_REASONS,
    CommitAttempt,
    CommitStatus,
    Reason,
    reason_code,
)
from lambda_inbox.store._attribute_values import deserialize_item

#: Marks the inbox record's action in a transaction's owner map.
INBOX_ACTION = -1
CONDITION_FAILED = "ConditionalCheckFailed"


class VerdictKind:
    """What one message's verdict says (`Verdict.kind`): text constants, not an enum (an enum
    class costs cold start, and a verdict never leaves the library)."""

    COMMITTED = "committed"
    #: The inbox put's condition failed: another delivery completed the key (or holds a lease).
    INBOX_TAKEN = "inbox_taken"
    #: A domain condition failed: a business outcome for the handler to decide.
    CONDITION_FAILED = "condition_failed"
    #: DynamoDB refuses these writes whatever the timing: poison.
    REJECTED = "rejected"
    #: Refused as part of a multi-message transaction: retry each message alone to find out.
    SPLIT = "split"
    #: Throttling, conflicts, 5xx, timeouts: retry with backoff, counting the attempt.
    TRANSIENT = "transient"
    #: Cancelled for another message's reason: retry without counting.
    BYSTANDER = "bystander"
    #: Missing table or permission: report for redelivery now.
    UNAVAILABLE = "unavailable"


class Verdict:
    """What one attempt means for one message: its `kind` (a `VerdictKind`), a `detail`, the
    domain conditions that failed, and `stored`, the item that won (INBOX_TAKEN: the inbox
    record, or a `CreatesItem` item) as DynamoDB returned it (`ALL_OLD`), for the store to read.
    """

    __slots__ = ("detail", "failures", "kind", "stored")

    def __init__(
        self,
        kind: str,
        detail: str = "",
        failures: ConditionFailures | None = None,
        stored: Mapping[str, Any] | None = None,
    ) -> None:
        self.kind = kind
        self.detail = detail
        self.failures = failures
        self.stored = stored


def settle(
    attempt: CommitAttempt,
    actions: Sequence[Sequence[WriteAction]],
    owners: Sequence[tuple[int, int]],
    shared: Mapping[int, Sequence[tuple[int, int]]] | None = None,
) -> list[Verdict]:
    """One verdict per message. `actions[i]` are message i's domain writes; `owners[j]` says
    which message (and which of its actions, or INBOX_ACTION) transact item j belongs to, and
    `shared[j]`, when present, every owner of transact item j, a merge of commuting updates:
    its reason is every owner's reason."""
    shared = shared or {}
    count = len(actions)
    status = attempt.status
    if status == CommitStatus.COMMITTED:
        return [Verdict(VerdictKind.COMMITTED, f"{attempt.latency_ms:.1f} ms")] * count
    if status == CommitStatus.UNAVAILABLE:
        return [Verdict(VerdictKind.UNAVAILABLE, attempt.error)] * count
    if status == CommitStatus.REJECTED:
        kind = VerdictKind.SPLIT if count > 1 else VerdictKind.REJECTED
        return [Verdict(kind, attempt.error)] * count
    if status == CommitStatus.TRANSIENT:
        return [Verdict(VerdictKind.TRANSIENT, attempt.error)] * count
    per_message: list[list[tuple[int, Reason]]] = [[] for _ in range(count)]
    #: Messages that own a merged action DynamoDB refused: only alone can they be told apart.
    merged_refused: set[int] = set()
    for slot, (owner, reason) in enumerate(zip(owners, attempt.reasons, strict=False)):
        for index, position in shared.get(slot) or (owner,):
            per_message[index].append((position, reason))
            if slot in shared and reason_code(reason) in REJECTED_REASONS:
                merged_refused.add(index)
    if all(reason_code(reason) == "None" for reasons in per_message for _, reason in reasons):
        return [Verdict(VerdictKind.TRANSIENT, attempt.error)] * count  # no usable reasons
    return [
        _message_verdict(reasons, message_actions, attempt.error, index in merged_refused)
        for index, (reasons, message_actions) in enumerate(zip(per_message, actions, strict=True))
    ]


def _message_verdict(
    reasons: list[tuple[int, Reason]],
    actions: Sequence[WriteAction],
    error: str,
    merged_refused: bool = False,
) -> Verdict:
    coded = [(position, reason_code(reason), reason) for position, reason in reasons]
    codes = {code for _, code, _ in coded}
    inbox = next((reason for position, code, reason in coded if position == INBOX_ACTION), None)
    if inbox is not None and reason_code(inbox) == CONDITION_FAILED:
        return Verdict(VerdictKind.INBOX_TAKEN, stored=inbox.get("Item") or None)
    if codes & REJECTED_REASONS:
        if merged_refused:  # a sum may be refused where each update alone is not
            detail = "a merged update was refused; retried alone"
            return Verdict(VerdictKind.SPLIT, detail)
        detail = "; ".join(
            str(reason.get("Message") or "") for _, code, reason in coded if code != "None"
        )
        return Verdict(VerdictKind.REJECTED, detail)
    if CONDITION_FAILED in codes:
        failures = ConditionFailures(
            tuple(
                FailedCondition(
                    actions[position],
                    deserialize_item(reason["Item"]) if reason.get("Item") else None,
                )
                for position, code, reason in coded
                if code == CONDITION_FAILED
            )
        )
        return Verdict(VerdictKind.CONDITION_FAILED, failures=failures)
    if codes & TRANSIENT_REASONS or codes - {"None"}:
        return Verdict(VerdictKind.TRANSIENT, error)
    return Verdict(VerdictKind.BYSTANDER)
