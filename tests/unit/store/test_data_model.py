"""The data model in `lambda_inbox.store`'s docstring names every attribute the store writes,
and only those: each kind of item is written through the store on moto and read back raw."""

from __future__ import annotations

import re
from typing import Any

from aws_lambda_powertools import Logger

import lambda_inbox.store
from devkit.app_state import AppState
from lambda_inbox import InboxConfig
from lambda_inbox._internal.deadline import Deadline
from lambda_inbox.store import InboxRecord, Status
from lambda_inbox.store._outbox_item import outbox_put
from lambda_inbox.store._progress import AggregateProgressStore
from lambda_inbox.store._reaper_claims import ReaperClaims

#: An attribute as the data model lists it: its name, then its type in parentheses.
DOCUMENTED = re.compile(r"`([a-z_]+)` \(")


def documented(text: str) -> set[str]:
    return set(DOCUMENTED.findall(text))


def raw(aws: AppState, pk: str) -> dict[str, Any]:
    item: dict[str, Any] = aws.dynamodb.get_item(
        TableName=aws.inbox, Key={"pk": {"S": pk}}, ConsistentRead=True
    )["Item"]
    return item


def written(aws: AppState) -> set[str]:
    """Every attribute name of every item the store writes, written through the store."""
    names: set[str] = set()
    full = InboxRecord(
        "c", "k", Status.FAILED, "fp", 1, "src", "d-1", "2026-01-01T00:00:00.000+00:00",
        "2026-01-01T00:00:00.000+00:00", 2, 1.5, "owner", "code", "error", "{}", b"x", True,
        "2026-01-01T00:00:00.000+00:00", "2026-01-01T00:00:00.000+00:00",
    )  # fmt: skip
    assert None not in full, "every field set"
    aws.dynamodb.put_item(TableName=aws.inbox, Item=full._replace(dead_lettered_at=None).to_item())
    ReaperClaims(aws.dynamodb, aws.inbox, token="t", claim_seconds=60).claim(full, now=2.0)
    names |= set(raw(aws, full.pk)) | set(full.to_item())
    config = InboxConfig("c", aws.inbox)
    progress = AggregateProgressStore(
        aws.dynamodb, config, Deadline(None), Logger(service="test"), resumes_above=0
    )
    progress.keep("event-1", 5)
    names |= set(raw(aws, "#aggregate#c#event-1"))
    requests: tuple[dict[str, Any], ...] = (
        {"attributes": {"a": "b"}, "group_id": "g"},
        {"event_source": "orders", "detail_type": "OrderShipped", "body": {"id": 1}},
    )
    for request in requests:
        _, item, _, _ = outbox_put(
            key_attributes=("pk", "sk"), **{"destination": "q", "body": "x", **request}
        )
        names |= set(item) - {"sk"}
    return names


def test_the_data_model_names_what_the_store_writes(aws: AppState) -> None:
    stored = written(aws)
    model = documented(lambda_inbox.store.__doc__ or "")
    assert sorted(stored - model) == [], "written, not in the data model"
    assert sorted(model - stored) == [], "in the data model, never written"


def test_an_attribute_missing_from_the_data_model_is_found() -> None:
    model = "- `pk` (S): the key.\n- `owner` (S): whose lease."
    assert documented(model) == {"pk", "owner"}
    assert {"pk", "owner", "attempts"} - documented(model) == {"attempts"}
