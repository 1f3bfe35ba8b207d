"""`PowertoolsIdempotency`: the cut-over from Powertools' `@idempotent_function` to the inbox,
with no message applied twice (docs/powertools.md, "Migrating from @idempotent").

During the window, each message's transaction also checks Powertools' record of the same
message (a `ConditionCheck` in the same `TransactWriteItems`, so no request is added and nothing
can change between the check and the commit). A message Powertools completed fails that check;
the inbox then records it as done and writes nothing else. The key is Powertools' own: its
persistence layer, configured as the old decorator configured it, computes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lambda_inbox._errors import ErrorCode, PoisonMessage
from lambda_inbox.store._powertools_records import (
    COMPLETED_BY_POWERTOOLS,
    not_completed,
    record_key,
)

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
    )

    from lambda_inbox._commit.actions import ConditionFailures
    from lambda_inbox._commit.unit_of_work import UnitOfWork

Decide = Callable[[Any, "UnitOfWork"], object]
OnConditionFailed = Callable[[Any, "ConditionFailures", "UnitOfWork"], object]


class PowertoolsIdempotency:
    """What `@idempotent_function` recorded, read during a cut-over:
    `InboxConfig(..., commit=GroupCommit(migrating_from=PowertoolsIdempotency(persistence_store,
    config, function="app.record_order", until=...)))`.

    `persistence_store` and `config`: the `DynamoDBPersistenceLayer` and `IdempotencyConfig`
    the old decorator had (the table, its attribute names, `event_key_jmespath`, the hash).
    `function`: the decorated function, or its `"<module>.<qualname>"`, which Powertools puts
    in every key with the Lambda function's name (`key_prefix` instead, when the decorator had
    one). `data`: what the old function was given to hash, from the payload the inbox hands
    `decide` (default: the payload itself; for `InboxBatchProcessor`, the record). `until`:
    the end of the window; after it nothing is checked, and the setting can go at the next
    deploy.
    """

    __slots__ = ("_data", "_store", "_until")

    def __init__(
        self,
        persistence_store: DynamoDBPersistenceLayer,
        config: IdempotencyConfig,
        *,
        function: str | Callable[..., Any],
        data: Callable[[Any], Any] | None = None,
        key_prefix: str | None = None,
        until: datetime | None = None,
    ) -> None:
        name = function if isinstance(function, str) else _qualified(function)
        persistence_store.configure(config, name, key_prefix)
        self._store = persistence_store
        self._data = data
        self._until = None if until is None else until.timestamp()

    def idempotency_key(self, payload: Any) -> str | None:
        """Powertools' key of the message whose payload is `payload` (None: Powertools found
        no key in it, and recorded nothing)."""
        from aws_lambda_powertools.utilities.idempotency.base import _prepare_data

        data = payload if self._data is None else self._data(payload)
        key: str | None = self._store._get_hashed_idempotency_key(_prepare_data(data))
        return key

    def guard(
        self, decide: Decide, on_condition_failed: OnConditionFailed | None
    ) -> tuple[Decide, OnConditionFailed]:
        """`decide` with the check of Powertools' record added to its unit of work, and the
        outcome of a failed check: the message is done (nothing written but its inbox record);
        other failed conditions go to `on_condition_failed` as before."""

        def checked(payload: Any, uow: UnitOfWork) -> None:
            self._check(payload, uow)
            decide(payload, uow)

        def outcome(payload: Any, failed: ConditionFailures, uow: UnitOfWork) -> None:
            if COMPLETED_BY_POWERTOOLS in failed:
                return  # applied under Powertools: recorded, not applied again
            if on_condition_failed is None:
                reason = "conditions failed: " + ", ".join(sorted(failed.labels))
                raise PoisonMessage(
                    reason + " (no on_condition_failed handler)", code=ErrorCode.CONDITION_FAILED
                )
            on_condition_failed(payload, failed, uow)

        return checked, outcome

    def _check(self, payload: Any, uow: UnitOfWork) -> None:
        if self._until is not None and time.time() >= self._until:
            return
        idempotency_key = self.idempotency_key(payload)
        if idempotency_key is None:
            return
        store = self._store
        key = record_key(
            idempotency_key,
            key_attr=store.key_attr,
            sort_key_attr=store.sort_key_attr,
            static_pk_value=store.static_pk_value,
        )
        condition, names, values = not_completed(store.key_attr, store.status_attr)
        uow.condition_check(
            store.table_name,
            key,
            condition,
            names=names,
            values=values,
            label=COMPLETED_BY_POWERTOOLS,
        )


def _qualified(function: Callable[..., Any]) -> str:
    """`"<module>.<qualname>"`, as `@idempotent_function` names the function it decorates."""
    return f"{function.__module__}.{function.__qualname__}"
