"""The effectively-once check's time (tools/lambda_inbox_tools/testing/check/: clock, expiry,
late): DynamoDB's TTL and `ClientRequestToken` window emulated on the check's clock, proved on
moto and devkit's memory DynamoDB; the late redelivery every run plays, named in the report;
the zoo's lapsing consumers caught only by lateness, and the library's own consumer passing with
its default retention and caught with a short one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from devkit.zoo import BROKEN, CONTROLS, Ledger, records, run
from devkit.zoo_ledger import OK, cancelled_by_condition, deliveries
from devkit.zoo_time import inbox_kept_for
from lambda_inbox import Clients, InboxConfig, InboxConsumer, Retention, UnitOfWork
from lambda_inbox_tools.services.offline import REGION
from lambda_inbox_tools.testing import (
    CheckClock,
    NotEffectivelyOnce,
    check_effectively_once,
    payload,
)
from lambda_inbox_tools.testing.check.dynamodb.expiry import TOKEN_SECONDS, Expiry

HOUR = 3600.0


@pytest.fixture
def moto_dynamodb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        for name, ttl in (("with_ttl", True), ("without_ttl", False)):
            client.create_table(
                TableName=name,
                BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            )
            if ttl:
                client.update_time_to_live(
                    TableName=name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"},
                )
        yield client


def _keys(client: Any, table: str) -> set[str]:
    return {item["pk"]["S"] for item in client.scan(TableName=table)["Items"]}


def test_expiry_deletes_what_ttl_would_on_the_clock_and_nothing_else(moto_dynamodb: Any) -> None:
    client, clock = moto_dynamodb, CheckClock()
    expiry = Expiry([client], clock)
    now = clock()
    items = {
        "past": {"N": str(int(now + 600))},  # past once the clock moves an hour on
        "future": {"N": str(int(now + 2 * HOUR))},
        "text": {"S": "1"},  # TTL reads numbers only
    }
    for table in ("with_ttl", "without_ttl"):
        for name, value in items.items():
            client.put_item(TableName=table, Item={"pk": {"S": name}, "expires_at": value})
        client.put_item(TableName=table, Item={"pk": {"S": "none"}})
    try:
        assert expiry.expire() == 0  # nothing has lapsed yet
        clock.advance(HOUR)
        assert expiry.expire() == 1
    finally:
        expiry.remove()
    assert _keys(client, "with_ttl") == {"future", "text", "none"}
    assert _keys(client, "without_ttl") == {"past", "future", "text", "none"}


def test_a_client_request_token_lapses_after_10_minutes_on_the_clock() -> None:
    ledger, clock = Ledger.in_memory(), CheckClock()
    expiry = Expiry([ledger.dynamodb], clock)
    token = str(uuid.uuid4())

    def apply() -> None:
        ledger.dynamodb.transact_write_items(
            TransactItems=[{"Update": ledger.effect("E-1")}], ClientRequestToken=token
        )

    try:
        apply()
        clock.advance(TOKEN_SECONDS - 60)
        apply()  # within the window: idempotent
        assert ledger.effects()["E-1"] == 1
        clock.advance(120)
        apply()  # 11 minutes after the first use: a new transaction
        apply()  # and that one idempotent in its turn
    finally:
        expiry.remove()
    assert ledger.effects()["E-1"] == 2


def test_the_report_names_the_late_redelivery() -> None:
    report = run(CONTROLS["inbox records kept 7 days"], "sqs", 3, Ledger.in_memory())
    drawn, at_the_end = report.late
    assert " after the run began (" in drawn
    assert at_the_end.split(" ", 1)[1].startswith("6 d 23 h 59 min after the run began (")
    assert f"late, in a redrive window of 7 d: {drawn}; {at_the_end};" in str(report)


@pytest.mark.parametrize(
    "consumer", ["inbox records kept 15 minutes", "ClientRequestToken as the only dedupe"]
)
@pytest.mark.parametrize("source", ["sqs", "kafka", "dynamodb"])
def test_a_lapsing_dedupe_is_caught_only_by_lateness(consumer: str, source: str) -> None:
    """Within a redrive window of 10 minutes, shorter than either dedupe, both pass: what
    catches them is the late redelivery, not the rest of the run."""
    for seed in range(3):
        ledger = Ledger.in_memory()
        clock = CheckClock()
        ledger.clock = clock
        check_effectively_once(
            BROKEN[consumer](ledger),
            records(source),
            effects=ledger.effects,
            key=lambda record: payload(record)["event_id"],
            clients=[ledger.dynamodb],
            seed=seed,
            batch_size=4,
            clock=clock,
            redrive_window=timedelta(minutes=10),
        )


def _library_handler(retention: timedelta | None, clock: CheckClock, client: Any) -> Any:
    """The library's consumer: each message's effect an `ADD applied :1` on `EFFECT#{event_id}`
    of the TTL table's neighbour, its inbox on `with_ttl` (TTL on `expires_at`, as the
    library's inbox table has it)."""
    settings: dict[str, Any] = {"clock": clock, "key_attributes": ("pk",)}
    if retention is not None:
        settings["retention"] = Retention(completed=retention)
    config = InboxConfig("points", inbox_table="with_ttl", **settings)

    def apply(message: dict[str, Any], uow: UnitOfWork) -> None:
        key = {"pk": f"EFFECT#{message['event_id']}"}
        uow.update("without_ttl", key, "ADD applied :one", values={":one": 1})

    consumer = InboxConsumer(
        "points",
        model=dict,
        decide=apply,
        key="event_id",
        clients=Clients(dynamodb=client),
        config=config,
    )
    return lambda event, context: consumer.handle(event, context)


def _applied(client: Any) -> dict[str, int]:
    items = client.scan(TableName="without_ttl")["Items"]
    return {i["pk"]["S"].removeprefix("EFFECT#"): int(i["applied"]["N"]) for i in items}


@pytest.mark.parametrize(("retention", "caught"), [(None, False), (timedelta(minutes=15), True)])
def test_the_library_passes_with_its_default_retention_and_not_with_15_minutes(
    moto_dynamodb: Any, retention: timedelta | None, caught: bool
) -> None:
    clock = CheckClock()

    def run_check() -> Any:
        return check_effectively_once(
            _library_handler(retention, clock, moto_dynamodb),
            records("kafka"),  # no overlapping invocations: moto loses concurrent writes
            effects=lambda: _applied(moto_dynamodb),
            key=lambda record: payload(record)["event_id"],
            clients=[moto_dynamodb],
            seed=1,
            batch_size=4,
            clock=clock,
        )

    if caught:
        with pytest.raises(NotEffectivelyOnce, match="applied twice"):
            run_check()
    else:
        assert run_check().late


@pytest.mark.parametrize(("window_days", "caught"), [(7, True), (5, False)])
def test_a_dedupe_shorter_than_the_window_is_caught_on_every_seed(
    window_days: int, caught: bool
) -> None:
    """Records kept 6 days: caught in the default window of 7 days whatever the draws (one late
    delivery comes at the window's end), passed in a declared window of 5."""
    said = []
    for seed in range(5):
        ledger, clock = Ledger.in_memory(), CheckClock()
        ledger.clock = clock
        try:
            check_effectively_once(
                inbox_kept_for(timedelta(days=6))(ledger),
                records("sqs"),
                effects=ledger.effects,
                key=lambda record: payload(record)["event_id"],
                clients=[ledger.dynamodb],
                seed=seed,
                batch_size=4,
                clock=clock,
                redrive_window=timedelta(days=window_days),
            )
            said.append(False)
        except NotEffectivelyOnce as finding:
            said.append(str(finding).startswith("applied twice"))
    assert said == [caught] * 5


def test_effects_whose_own_items_expire_are_not_taken_for_lost() -> None:
    """A sound inbox whose effect items carry a TTL of a day: the late deliveries' sweep removes
    them, and the check counts the effects from before the late deliveries and what those add."""

    def consumer(ledger: Ledger) -> Any:
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            for _, message in deliveries(event):
                event_id = str(message["event_id"])
                effect = ledger.effect(event_id)
                effect["UpdateExpression"] = "ADD applied :one SET expires_at = :expires"
                effect["ExpressionAttributeValues"][":expires"] = {
                    "N": str(int(ledger.clock() + 24 * HOUR))
                }
                actions = [{"Put": ledger.mark(event_id)}, {"Update": effect}]
                try:
                    ledger.dynamodb.transact_write_items(TransactItems=actions)
                except ClientError as error:
                    if not cancelled_by_condition(error):
                        raise
            return OK

        return handler

    for seed in range(3):
        report = run(consumer, "sqs", seed, Ledger.in_memory())
        removed = [int(late.rsplit("(", 1)[1].split(" ", 1)[0]) for late in report.late]
        assert sum(removed) >= 8  # every effect item swept, and still no loss reported
