"""rewards' own tests, written only with lambda-inbox's public API and its testing kit
(`pip install "lambda-inbox[testing]"`; the fixtures come from its pytest plugin). The app's
tables, queues and Kinesis stream are the template's own, on DynamoDB Local and a moto server."""

from __future__ import annotations

import base64
from collections import Counter
from pathlib import Path
from typing import Any

from lambda_inbox_tools.testing import (
    LocalApp,
    check_effectively_once,
    deliver_until_acknowledged,
    dynamodb_stream_event,
    dynamodb_stream_record,
    kinesis_event,
    kinesis_record,
    payload,
)

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"


def purchase(number: int, *, customer: str = "C-1", amount: int = 1250) -> dict[str, Any]:
    return {"event_id": f"P-{number}", "customer_id": customer, "amount_cents": amount}


def points(app: LocalApp) -> tuple[Counter[str], dict[str, tuple[int, int]]]:
    """Purchases awarded (event id -> items) and each customer's (points, purchases)."""
    awarded: Counter[str] = Counter()
    totals: dict[str, tuple[int, int]] = {}
    for item in app.items("PointsTable"):
        customer = item["pk"].removeprefix("CUSTOMER#")
        if item["sk"] == "POINTS":
            totals[customer] = (int(item["points"]), int(item["purchases"]))
        else:
            awarded[item["sk"].removeprefix("PURCHASE#")] += 1
    return awarded, totals


def tiers(app: LocalApp) -> dict[str, int]:
    return {
        item["sk"].removeprefix("TIER#"): int(item["customers"])
        for item in app.items("TiersTable")
        if int(item["customers"])
    }


def test_a_kinesis_batch_retried_whole_awards_each_purchase_once(local_app: Any) -> None:
    app = local_app(TEMPLATE)
    award_points = app.function("AwardPointsFunction")
    event = kinesis_event(kinesis_record(n, purchase(n, amount=100 * (n + 1))) for n in range(5))

    assert award_points(event) == {"batchItemFailures": []}
    assert award_points(event) == {"batchItemFailures": []}  # the whole batch again
    fresh = app.function("AwardPointsFunction", fresh=True)  # another execution environment
    assert fresh(event) == {"batchItemFailures": []}

    awarded, totals = points(app)
    assert awarded == Counter({f"P-{n}": 1 for n in range(5)})
    assert totals == {"C-1": (1 + 2 + 3 + 4 + 5, 5)}


def test_an_invalid_purchase_is_dead_lettered_with_its_bytes_and_the_shard_goes_on(
    local_app: Any,
) -> None:
    app = local_app(TEMPLATE)
    award_points = app.function("AwardPointsFunction")
    records = [kinesis_record(n, purchase(n)) for n in range(3)]
    records[1] = kinesis_record(
        1, b'{"event_id": "P-1", "amount_cents": "lots"}', partition_key="C-9"
    )

    assert award_points(kinesis_event(records)) == {"batchItemFailures": []}

    (dead,) = app.messages("RewardsDLQ")
    attributes = {
        name: value.get("StringValue") for name, value in dead["MessageAttributes"].items()
    }
    assert dead["Body"] == base64.b64decode(records[1]["kinesis"]["data"]).decode()
    assert attributes["inbox-error-code"] == "invalid_payload"
    assert attributes["kinesis-sequence-number"] == records[1]["kinesis"]["sequenceNumber"]
    assert attributes["kinesis-partition-key"] == "C-9"
    assert points(app)[1] == {"C-1": (24, 2)}


def test_award_points_is_effectively_once_through_redeliveries_rewinds_and_crashes(
    local_app: Any,
) -> None:
    app = local_app(TEMPLATE)
    award_points = app.function("AwardPointsFunction")
    records = [
        kinesis_record(
            n,
            purchase(n, customer=f"C-{n % 4}", amount=100 + n),
            shard_id=f"shardId-00000000000{n % 2}",
        )
        for n in range(30)
    ]

    report = check_effectively_once(
        award_points,
        records,
        effects=lambda: points(app)[0],
        key=lambda record: payload(record)["event_id"],
        seed=2026,
    )

    assert report.replays >= 2 and report.new_ids >= 1
    assert {kind for kind, n in report.crashes.items() if n} >= {"after", "before", "error"}


def points_change(position: int, customer: str, old: int | None, new: int) -> dict[str, Any]:
    key = {"pk": f"CUSTOMER#{customer}", "sk": "POINTS"}
    return dynamodb_stream_record(
        position,
        key,
        old_image={**key, "points": old, "purchases": 1} if old is not None else None,
        new_image={**key, "points": new, "purchases": 2},
    )


def test_the_tier_projection_counts_each_change_once_whatever_the_stream_redelivers(
    local_app: Any,
) -> None:
    app = local_app(TEMPLATE)
    project = app.function("TierProjectionFunction")
    changes = [
        points_change(0, "A", None, 50),  # bronze
        points_change(1, "B", None, 150),  # silver
        points_change(2, "A", 50, 120),  # bronze -> silver
        points_change(3, "C", None, 5),  # bronze
        points_change(4, "B", 150, 1500),  # silver -> gold
        points_change(5, "C", 5, 60),  # within bronze: nothing moves
    ]
    event = dynamodb_stream_event(changes)

    assert deliver_until_acknowledged(project, event) == 1
    assert project(event) == {"batchItemFailures": []}  # the batch retried whole
    rewound = dynamodb_stream_event(changes[2:])  # a rewind to an earlier checkpoint
    assert project(rewound) == {"batchItemFailures": []}

    assert tiers(app) == {"bronze": 1, "silver": 1, "gold": 1}
