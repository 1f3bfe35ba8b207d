"""Powertools' idempotency records (`@idempotent` and `@idempotent_function` with a
`DynamoDBPersistenceLayer`), as a consumer migrating from them reads them: the item an idempotency
key names, and the condition that Powertools did not complete it (docs/powertools.md, "Migrating
from @idempotent"). A foreign stored shape: its attribute names are the persistence layer's
settings (`key_attr`, `sort_key_attr`, `static_pk_value`, `status_attr`)."""

from __future__ import annotations

from typing import Any

#: Powertools' status of a record whose function returned (`DataRecord`'s `COMPLETED`).
COMPLETED = "COMPLETED"
#: The label of the condition in a unit of work, read back from `ConditionFailures`.
COMPLETED_BY_POWERTOOLS = "powertools-idempotency"


def record_key(
    idempotency_key: str, *, key_attr: str, sort_key_attr: str | None, static_pk_value: str
) -> dict[str, str]:
    """The key of the record of `idempotency_key` (Powertools' composite key when the table
    has a sort key: the static partition value, the idempotency key sorted under it)."""
    if sort_key_attr:
        return {key_attr: static_pk_value, sort_key_attr: idempotency_key}
    return {key_attr: idempotency_key}


def not_completed(key_attr: str, status_attr: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The condition (with its names and values) that holds unless Powertools completed the
    record: absent, or in progress (an invocation that crashed before it finished: Powertools
    itself would run it again). Expired records count as completed: during a cut-over no
    message Powertools applied is applied again."""
    return (
        "attribute_not_exists(#key) OR #status <> :completed",
        {"#key": key_attr, "#status": status_attr},
        {":completed": COMPLETED},
    )
