"""Leased mode: for handlers whose effect leaves DynamoDB (payment APIs, email, webhooks).

Per leader delivery, after the duplicate filter and `decide`:

1. **claim**: a conditional write of an `IN_PROGRESS` record with a fresh owner token, a lease
   expiry and `attempts + 1`. Claimable: no record, an expired one (`expires_at < now`), a
   `FAILED` one (a replay: attempts start again at 1), or an `IN_PROGRESS` one whose lease has
   expired. A live `COMPLETED` record makes the delivery a duplicate; a live lease held by
   another delivery makes it `failed` with `in_progress` (redelivered later). The claim also
   stores the payload snapshot, so the reaper can dead-letter a message that never comes back.
2. **side effect**: `side_effect(payload, LeaseContext)`; `LeaseContext.message_key` is the
   provider's idempotency key, `LeaseContext.time_left()` bounds its timeouts.
3. **complete**: the usual transaction, whose inbox `Put` is conditioned on
   `status = IN_PROGRESS AND owner = me`. A completion that lost its lease commits nothing and
   is reported `failed` with `lease_lost` (log line and `LeasesLost` metric).

Failures of the side effect: `PoisonMessage` is dead-lettered (record `FAILED`). Anything else
is transient: the message is reported `failed` with `side_effect_failed` and the lease is
**kept** until it expires (the outcome of a timed-out call is unknown: the lease is the backoff
that keeps the next delivery from calling the provider again at once); with
`LeasePolicy(release_on_failure=True)` it is released at once instead. The claim that would be
attempt `max_attempts + 1`, and a transient failure of attempt `max_attempts`, dead-letter the
message with `attempts_exhausted` instead.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .decision import short_error
from .errors import ConfigurationError, ErrorCode, PoisonMessage
from .outcomes import Outcome
from .store import (
    PARTITION_KEY,
    TTL_ATTRIBUTE,
    InboxRecord,
    Status,
    get_record,
    open_index_pk,
    open_index_shard,
    record_pk,
    utc_iso,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .dead_letter import DeadLettering
    from .deadline import Deadline
    from .decision import Decision
    from .identity import Delivery
    from .observability import Telemetry
    from .report import BatchReport
    from .triage import Triage

M = TypeVar("M")
#: Optimistic claim rounds before a contended key is reported `in_progress`.
_CLAIM_ROUNDS = 3
LEASE_LOST_DETAIL = "the lease was lost before completion (taken over or reaped); nothing committed"


@dataclass(frozen=True)
class LeasePolicy:
    """How long a claim holds a message, and how many claims a message gets.

    Keep `duration` above the side effect's worst-case time and below the source queue's
    visibility timeout, so a redelivery finds the lease expired and can take over.
    """

    duration: timedelta = timedelta(seconds=60)
    max_attempts: int = 5
    #: Release the lease at once after a transient failure (default: keep it until it expires).
    release_on_failure: bool = False

    def __post_init__(self) -> None:
        if self.duration <= timedelta(0):
            raise ConfigurationError("LeasePolicy.duration must be positive")
        if self.max_attempts < 1:
            raise ConfigurationError("LeasePolicy.max_attempts must be >= 1")


@dataclass(frozen=True)
class LeaseContext:
    """What a side effect knows about its lease."""

    #: The message key: pass it to the provider as its idempotency key.
    message_key: str
    #: This claim's owner token.
    owner: str
    #: 1 for the first claim of the message, 2 after a takeover, ...
    attempt: int
    lease_expires_at: float
    deadline: Deadline
    clock: Callable[[], float] = time.time

    def time_left(self) -> float:
        """Seconds before the lease expires or the invocation must answer, whichever is first."""
        lease_left = self.lease_expires_at - self.clock()
        invocation_left = self.deadline.left()
        left = lease_left if invocation_left is None else min(lease_left, invocation_left)
        return max(0.0, left)


SideEffect = Callable[[M, LeaseContext], object]


class ClaimState(StrEnum):
    CLAIMED = "claimed"
    COMPLETED = "completed"
    HELD = "held"
    EXHAUSTED = "exhausted"


@dataclass(frozen=True)
class Claim:
    state: ClaimState
    owner: str = ""
    attempt: int = 0
    lease_expires_at: float = 0.0
    #: The stored record that decided a state other than CLAIMED.
    record: InboxRecord | None = None


class LeaseStore:
    """Claims and releases leases on inbox records of one consumer."""

    def __init__(
        self,
        client: DynamoDBClient,
        *,
        table: str,
        consumer: str,
        policy: LeasePolicy,
        snapshot_bytes: int = 8 * 1024,
    ) -> None:
        self._client = client
        self.table = table
        self.consumer = consumer
        self.policy = policy
        self._snapshot_bytes = snapshot_bytes

    def claim(self, delivery: Delivery, *, now: float) -> Claim:
        """Claim `delivery`'s key: read the record (strongly consistent), then write the lease
        on condition that the record is still what was read (optimistic, a few rounds)."""
        for _ in range(_CLAIM_ROUNDS):
            record = get_record(self._client, self.table, self.consumer, delivery.key)
            names = {"#status": "status", "#owner": "owner"}
            values: dict[str, Any] = {}
            attempt = 1
            if record is None or not record.is_live(now):
                condition = f"attribute_not_exists({PARTITION_KEY}) OR {TTL_ATTRIBUTE} < :now"
                values[":now"] = {"N": str(int(now))}
                names = {}
            elif record.status is Status.COMPLETED:
                return Claim(ClaimState.COMPLETED, record=record)
            elif record.status is Status.FAILED:  # a replay after a fix: a fresh start
                condition = "#status = :failed"
                values[":failed"] = {"S": Status.FAILED.value}
                names = {"#status": "status"}
            else:
                if (record.lease_expires_at or 0.0) >= now:
                    return Claim(ClaimState.HELD, record=record)
                if record.attempts >= self.policy.max_attempts:
                    return Claim(ClaimState.EXHAUSTED, attempt=record.attempts, record=record)
                attempt = record.attempts + 1
                condition = "#status = :in_progress AND #owner = :old_owner"
                values[":in_progress"] = {"S": Status.IN_PROGRESS.value}
                values[":old_owner"] = {"S": record.owner or ""}
            owner = uuid.uuid4().hex
            expires = now + self.policy.duration.total_seconds()
            body = delivery.message.body
            snapshot = body[: self._snapshot_bytes]
            item = InboxRecord(
                consumer=self.consumer,
                message_key=delivery.key,
                status=Status.IN_PROGRESS,
                fingerprint=delivery.fingerprint,
                source=delivery.message.source,
                delivery_id=delivery.message.delivery_id,
                attempts=attempt,
                lease_expires_at=expires,
                owner=owner,
                payload_snapshot=snapshot,
                payload_truncated=len(body) > len(snapshot),
                open_since=utc_iso(expires),
            ).to_item()
            request: dict[str, Any] = {
                "TableName": self.table,
                "Item": item,
                "ConditionExpression": condition,
            }
            if names:
                request["ExpressionAttributeNames"] = names
            if values:
                request["ExpressionAttributeValues"] = values
            try:
                self._client.put_item(**request)
            except self._client.exceptions.ConditionalCheckFailedException:
                continue  # someone else wrote the record in between: look again
            return Claim(ClaimState.CLAIMED, owner, attempt, expires)
        return Claim(ClaimState.HELD)

    def fail_attempt(
        self, message_key: str, owner: str, *, code: str, error: str, now: float
    ) -> bool:
        """Record a transient failure on our lease; release it when the policy says so.

        Returns False when the lease is no longer ours (nothing written)."""
        pk = record_pk(self.consumer, message_key)
        expression = "SET error_code = :code, last_error = :error"
        values: dict[str, Any] = {
            ":code": {"S": code},
            ":error": {"S": error[:1024] or code},
            ":in_progress": {"S": Status.IN_PROGRESS.value},
            ":owner": {"S": owner},
        }
        names = {"#status": "status", "#owner": "owner"}
        if self.policy.release_on_failure:
            expression += ", lease_expires_at = :released, #open_pk = :open_pk, #open_sk = :since"
            values[":released"] = {"N": f"{now:.3f}"}
            values[":open_pk"] = {
                "S": open_index_pk(Status.IN_PROGRESS, open_index_shard(pk)),
            }
            values[":since"] = {"S": utc_iso(now)}
            names["#open_pk"] = "gsi_open_pk"
            names["#open_sk"] = "gsi_open_sk"
        try:
            self._client.update_item(
                TableName=self.table,
                Key={PARTITION_KEY: {"S": pk}},
                UpdateExpression=expression,
                ConditionExpression="#status = :in_progress AND #owner = :owner",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True


class Leases(Generic[M]):
    """The leased-mode stage of one consumer: claim, run the side effect, hand over to commit."""

    def __init__(
        self,
        store: LeaseStore,
        side_effect: SideEffect[M],
        *,
        telemetry: Telemetry,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self._side_effect = side_effect
        self._telemetry = telemetry
        self._now = now

    def run(
        self,
        decisions: list[Decision[M]],
        *,
        report: BatchReport,
        triage: Triage,
        dead_letters: DeadLettering,
        deadline: Deadline,
    ) -> list[Decision[M]]:
        """The decisions whose side effect succeeded under a lease, ready to complete."""
        ready: list[Decision[M]] = []
        for decision in decisions:
            delivery = decision.delivery
            if report.skip_if_blocked(delivery):
                continue
            if deadline.expired():
                detail = "no time left before the Lambda deadline; reported for redelivery"
                report.record(delivery, Outcome.FAILED, ErrorCode.DEADLINE, detail)
                continue
            if self._lease(decision, report, triage, dead_letters, deadline):
                ready.append(decision)
        return ready

    def _lease(
        self,
        decision: Decision[M],
        report: BatchReport,
        triage: Triage,
        dead_letters: DeadLettering,
        deadline: Deadline,
    ) -> bool:
        delivery = decision.delivery
        log = self._telemetry.logger
        try:
            claim = self.store.claim(delivery, now=self._now())
        except Exception as error:
            log.error(
                "lease claim failed; the record is reported for redelivery",
                extra={"message_key": delivery.key, "error": short_error(error)},
            )
            code = ErrorCode.INBOX_UNAVAILABLE
            report.record(delivery, Outcome.FAILED, code, short_error(error))
            return False
        if claim.state is ClaimState.COMPLETED:
            assert claim.record is not None
            triage.settle_against(delivery, claim.record.fingerprint)
            return False
        if claim.state is ClaimState.HELD:
            detail = "another delivery holds a live lease on this message"
            report.record(delivery, Outcome.FAILED, ErrorCode.IN_PROGRESS, detail)
            return False
        if claim.state is ClaimState.EXHAUSTED:
            assert claim.record is not None
            reason = (
                f"{claim.attempt} leased attempts did not complete; last error: "
                f"{claim.record.last_error or 'none recorded (the lease expired)'}"
            )
            poison = PoisonMessage(reason, code=ErrorCode.ATTEMPTS_EXHAUSTED)
            dead_letters.dead_letter(delivery, poison)
            return False
        context = LeaseContext(
            message_key=delivery.key,
            owner=claim.owner,
            attempt=claim.attempt,
            lease_expires_at=claim.lease_expires_at,
            deadline=deadline,
            clock=self._now,
        )
        try:
            self._side_effect(decision.payload, context)
        except PoisonMessage as poison:
            dead_letters.dead_letter(delivery, poison)
            return False
        except Exception as error:
            self._side_effect_failed(decision, claim, error, report, dead_letters)
            return False
        decision.lease_owner = claim.owner
        return True

    def _side_effect_failed(
        self,
        decision: Decision[M],
        claim: Claim,
        error: Exception,
        report: BatchReport,
        dead_letters: DeadLettering,
    ) -> None:
        delivery = decision.delivery
        detail = short_error(error)
        self._telemetry.logger.warning(
            "side effect failed",
            extra={"message_key": delivery.key, "attempt": claim.attempt, "error": detail},
        )
        if claim.attempt >= self.store.policy.max_attempts:
            reason = f"{claim.attempt} leased attempts failed; last error: {detail}"
            dead_letters.dead_letter(
                delivery, PoisonMessage(reason, code=ErrorCode.ATTEMPTS_EXHAUSTED)
            )
            return
        try:
            self.store.fail_attempt(
                delivery.key,
                claim.owner,
                code=ErrorCode.SIDE_EFFECT_FAILED,
                error=detail,
                now=self._now(),
            )
        except Exception as write_error:  # the lease simply expires instead
            self._telemetry.logger.warning(
                "could not record the failed attempt on the lease",
                extra={"message_key": delivery.key, "error": short_error(write_error)},
            )
        report.record(delivery, Outcome.FAILED, ErrorCode.SIDE_EFFECT_FAILED, detail)


def lease_lost(
    delivery: Delivery, stored: Mapping[str, Any], report: BatchReport, telemetry: Telemetry
) -> None:
    """A leased completion met a record that is no longer its lease: nothing committed."""
    telemetry.logger.warning(
        "lease lost; the completion was not committed",
        extra={
            "consumer": telemetry.consumer,
            "message_key": delivery.key,
            "stored_status": stored.get("status"),
        },
    )
    report.record(delivery, Outcome.FAILED, ErrorCode.LEASE_LOST, LEASE_LOST_DETAIL)


def lease_seconds(lease: LeasePolicy | timedelta | float | None) -> LeasePolicy:
    """A `LeasePolicy` from what `InboxConsumer(lease=...)` accepts."""
    if lease is None:
        return LeasePolicy()
    if isinstance(lease, LeasePolicy):
        return lease
    if isinstance(lease, timedelta):
        return LeasePolicy(duration=lease)
    if isinstance(lease, (int, float)) and math.isfinite(lease):
        return LeasePolicy(duration=timedelta(seconds=lease))
    raise ConfigurationError(f"lease must be a LeasePolicy, a timedelta or seconds, not {lease!r}")
