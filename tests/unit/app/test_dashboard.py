"""template.yaml's `InboxDashboard`: in both template variants it plots only metrics the library
really emits (captured here from a consumer, the relay and the reaper), every consumer's outcomes
and commit latency, every dead-letter and failure queue, the relay, the reaper and every alarm;
and the check names each of those when a broken body leaves it out."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer
from pydantic import BaseModel

from devkit.app_state import AppState
from devkit.dashboard import (
    CONSUMER_METRICS,
    dashboard_body,
    dashboard_metrics,
    dashboard_problems,
)
from devkit.emf import emf_records
from devkit.events import outbox_image, sqs_event, sqs_record
from devkit.paths import REPO_ROOT
from lambda_inbox import OutboxRelay, UnitOfWork
from lambda_inbox.reaper import ReapSummary, emit_metrics
from lambda_inbox_tools.local.cfn import load_template
from lambda_inbox_tools.testing import (
    FakeLambdaContext,
    dynamodb_stream_event,
    dynamodb_stream_record,
)

TEMPLATE = load_template(REPO_ROOT / "template.yaml")
DEFAULTS: dict[str, str] = {}
#: The variant `make template-lint` also lints: an MSK cluster (and its two alarms), a key.
WITH_MSK = {
    "MskClusterArn": "arn:aws:kafka:us-east-1:123456789012:cluster/payments/abcd-1",
    "KmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
}
#: The functions' namespace, as template.yaml's Globals set it.
NAMESPACE = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"][
    "POWERTOOLS_METRICS_NAMESPACE"
]
Emitted = set[tuple[str, frozenset[str]]]


class Order(BaseModel):
    event_id: str
    fail: bool = False


def a_consumer_batch(aws: AppState) -> None:
    def decide(order: Order, uow: UnitOfWork) -> None:
        if order.fail:
            raise ConnectionError("down")
        uow.put("domain", {"pk": f"ORDER#{order.event_id}", "sk": "ORDER"})

    inbox = aws.consumer("orders", model=Order, decide=decide, key="event_id")
    inbox.handle(sqs_event(sqs_record('{"event_id": "e-0"}')))
    inbox.handle(
        sqs_event(
            sqs_record('{"event_id": "e-0"}'),  # duplicate
            sqs_record('{"event_id": "e-1"}'),  # committed
            sqs_record("{not json"),  # dead-lettered
            sqs_record('{"event_id": "e-2", "fail": true}'),  # failed
        )
    )


def a_relay_batch(aws: AppState) -> None:
    """One outbox item of the stream relayed to its queue."""
    url = aws.sqs.create_queue(QueueName="notifications")["QueueUrl"]
    deserializer = TypeDeserializer()
    stored = outbox_image("m-1", "notifications", body="{}")
    item = {name: deserializer.deserialize(value) for name, value in stored.items()}
    record = dynamodb_stream_record(1, {"pk": item["pk"], "sk": item["sk"]}, new_image=item)
    OutboxRelay(destinations={"notifications": url}, sqs=aws.sqs).handle(
        dynamodb_stream_event([record]), FakeLambdaContext()
    )


def a_reaper_run() -> None:
    summary = ReapSummary(reaped=1, dead_lettered=1)
    summary.count_open("orders", age=5.0)
    emit_metrics(summary)


@pytest.fixture
def emitted(
    aws: AppState, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Emitted:
    """(name, dimension names) of every `LambdaInbox` metric a consumer, the relay and the
    reaper print, each run under its service name as deployed."""
    found: Emitted = set()
    runs: list[tuple[str, Callable[[], None]]] = [
        ("orders", lambda: a_consumer_batch(aws)),
        ("outbox-relay", lambda: a_relay_batch(aws)),
        ("inbox-reaper", a_reaper_run),
    ]
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", NAMESPACE)
    for service, run in runs:
        monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", service)
        capsys.readouterr()
        run()
        for record in emf_records(capsys.readouterr().out):
            for directive in record["_aws"]["CloudWatchMetrics"]:
                assert directive["Namespace"] == NAMESPACE
                for dimensions in directive["Dimensions"]:
                    for metric in directive["Metrics"]:
                        found.add((metric["Name"], frozenset(dimensions)))
    assert ("MessagesCommitted", frozenset({"consumer", "service"})) in found
    assert ("OutboxRelayed", frozenset({"service"})) in found
    assert ("OutboxRelayRetries", frozenset({"service", "destination_kind"})) in found
    assert ("OldestOpenRecordAge", frozenset({"service", "consumer"})) in found
    return found


@pytest.mark.parametrize("parameters", [DEFAULTS, WITH_MSK], ids=["defaults", "msk-and-key"])
def test_the_dashboard_shows_what_an_operator_needs_in_both_variants(
    parameters: dict[str, str], emitted: Emitted
) -> None:
    body = dashboard_body(TEMPLATE, parameters)
    assert dashboard_problems(TEMPLATE, parameters, body, emitted) == []


def test_the_msk_variant_adds_its_alarms_and_the_default_lacks_them() -> None:
    def alarms(body: dict[str, Any]) -> list[str]:
        (widget,) = [w for w in body["widgets"] if w["type"] == "alarm"]
        names: list[str] = widget["properties"]["alarms"]
        return names

    default, msk = (
        alarms(dashboard_body(TEMPLATE, DEFAULTS)),
        alarms(dashboard_body(TEMPLATE, WITH_MSK)),
    )
    assert set(msk) - set(default) == {
        "arn:aws:local:us-east-1:123456789012:PaymentMskFailuresAlarm",
        "arn:aws:local:us-east-1:123456789012:PaymentEventsOffsetLagAlarm",
    }


def test_every_consumer_of_the_template_has_its_own_widgets() -> None:
    titles = {w["properties"].get("title") for w in dashboard_body(TEMPLATE, DEFAULTS)["widgets"]}
    for consumer in ("order-events", "payment-events", "customer-notifications"):
        assert {f"{consumer}: messages", f"{consumer}: commit latency (ms)"} <= titles


# ---- the check catches what a broken dashboard leaves out ------------------------------------


def without_metric(name: str, **dimensions: str) -> Callable[[dict[str, Any]], None]:
    def edit(body: dict[str, Any]) -> None:
        for widget in body["widgets"]:
            metrics = widget["properties"].get("metrics", [])
            widget["properties"]["metrics"] = [
                m
                for m in metrics
                if not (m[1] == name and all(v in m for v in dimensions.values()))
            ]

    return edit


def renamed(old: str, new: str) -> Callable[[dict[str, Any]], None]:
    def edit(body: dict[str, Any]) -> None:
        for widget in body["widgets"]:
            for metric in widget["properties"].get("metrics", []):
                if metric[1] == old:
                    metric[1] = new

    return edit


def without_alarm(logical_id: str) -> Callable[[dict[str, Any]], None]:
    def edit(body: dict[str, Any]) -> None:
        for widget in body["widgets"]:
            if widget["type"] == "alarm":
                alarms = widget["properties"]["alarms"]
                widget["properties"]["alarms"] = [a for a in alarms if not a.endswith(logical_id)]

    return edit


def no_alarms(body: dict[str, Any]) -> None:
    without_alarm("Alarm")(body)


def wrong_dimension(body: dict[str, Any]) -> None:
    for widget in body["widgets"]:
        for metric in widget["properties"].get("metrics", []):
            if metric[1] == "OutboxOldestItemAge":
                metric[2:4] = ["consumer", "outbox-relay"]


def too_wide(body: dict[str, Any]) -> None:
    body["widgets"][1]["width"] = 24  # over its neighbour on the right


def off_the_grid(body: dict[str, Any]) -> None:
    body["widgets"][2]["x"] = 16


@pytest.mark.parametrize(
    ("parameters", "edit", "problem"),
    [
        (
            DEFAULTS,
            without_metric("MessagesDeadLettered", consumer="payment-events"),
            "consumer payment-events: no MessagesDeadLettered",
        ),
        (
            DEFAULTS,
            without_metric("CommitLatency", consumer="order-events"),
            "consumer order-events: no CommitLatency",
        ),
        (
            DEFAULTS,
            renamed("MessagesDuplicate", "MessagesDuplicates"),
            "MessagesDuplicates ['consumer', 'service'] is never emitted",
        ),
        (DEFAULTS, wrong_dimension, "OutboxOldestItemAge ['consumer'] is never emitted"),
        (
            DEFAULTS,
            without_metric(
                "ApproximateNumberOfMessagesVisible", q="lambda-inbox-notifications-dlq"
            ),
            "queue lambda-inbox-notifications-dlq: no depth",
        ),
        (
            WITH_MSK,
            without_metric(
                "ApproximateNumberOfMessagesVisible", q="lambda-inbox-payment-msk-failures"
            ),
            "queue lambda-inbox-payment-msk-failures: no depth",
        ),
        (
            DEFAULTS,
            without_alarm("OldestOpenRecordAlarm"),
            "alarm OldestOpenRecordAlarm: not shown",
        ),
        (
            WITH_MSK,
            without_alarm("PaymentEventsOffsetLagAlarm"),
            "alarm PaymentEventsOffsetLagAlarm: not shown",
        ),
        (DEFAULTS, no_alarms, "alarm widget 'Alarms' holds 0 alarms, not 1 to 100"),
        (DEFAULTS, without_metric("Reaped"), "no Reaped {'service': 'inbox-reaper'}"),
        (
            DEFAULTS,
            without_metric("OutboxRelayRetries", kind="eventbridge"),
            "no OutboxRelayRetries {'destination_kind': 'eventbridge', 'service': 'outbox-relay'}",
        ),
        (
            DEFAULTS,
            without_metric("OutboxRelayFailures", kind="sns"),
            "no OutboxRelayFailures {'destination_kind': 'sns', 'service': 'outbox-relay'}",
        ),
        (
            DEFAULTS,
            without_metric("Invocations"),
            "no Invocations {'FunctionName': 'lambda-inbox-InboxReaperFunction'}",
        ),
        (
            DEFAULTS,
            too_wide,
            "widgets 'order-events: messages' and 'order-events: commit latency (ms)' overlap",
        ),
        (
            DEFAULTS,
            off_the_grid,
            "widget 'order-events: commit latency (ms)' leaves the 24-column grid",
        ),
    ],
    ids=[
        "dead-lettered",
        "latency",
        "misspelled",
        "dimension",
        "dlq-depth",
        "msk-failures-depth",
        "alarm",
        "msk-alarm",
        "empty-alarm-widget",
        "reaped",
        "relay-retries-by-kind",
        "relay-failures-by-kind",
        "reaper-runs",
        "overlap",
        "grid",
    ],
)
def test_a_broken_dashboard_is_named(
    parameters: dict[str, str],
    edit: Callable[[dict[str, Any]], None],
    problem: str,
    emitted: Emitted,
) -> None:
    body = copy.deepcopy(dashboard_body(TEMPLATE, parameters))
    edit(body)
    assert problem in dashboard_problems(TEMPLATE, parameters, body, emitted)


def test_an_alarm_of_the_other_variant_is_named(emitted: Emitted) -> None:
    body = dashboard_body(TEMPLATE, WITH_MSK)
    problems = dashboard_problems(TEMPLATE, DEFAULTS, body, emitted)
    assert (
        "alarm widget names arn:aws:local:us-east-1:123456789012:PaymentMskFailuresAlarm, "
        "not in this stack"
    ) in problems


def test_the_snippet_for_a_teams_template_plots_what_the_library_emits(emitted: Emitted) -> None:
    snippet = load_template(REPO_ROOT / "docs/snippets/inbox-dashboard.yaml")
    parameters = {
        "ConsumerName": "orders",
        "ServiceName": "orders-service",
        "FunctionName": "orders-function",
        "DeadLetterQueueName": "orders-dlq",
    }
    plotted = dashboard_metrics(dashboard_body(snippet, parameters, "ConsumerDashboard"))
    ours = {(m.name, m.dimension_names) for m in plotted if m.namespace == NAMESPACE}
    assert ours <= emitted
    assert {name for name, _ in ours} == set(CONSUMER_METRICS)
    assert all(
        dict(m.dimensions) == {"consumer": "orders", "service": "orders-service"}
        for m in plotted
        if m.namespace == NAMESPACE
    )
    assert {m.name for m in plotted if m.dimensions == (("QueueName", "orders-dlq"),)} == {
        "ApproximateNumberOfMessagesVisible",
        "ApproximateAgeOfOldestMessage",
    }


def test_the_body_is_plain_json_cloudwatch_accepts() -> None:
    body = dashboard_body(TEMPLATE, DEFAULTS)
    assert json.loads(json.dumps(body)) == body
    assert len(json.dumps(body)) < 1_000_000  # CloudWatch's limit on a dashboard body
    assert {m.namespace for m in dashboard_metrics(body)} == {
        "LambdaInbox",
        "AWS/SQS",
        "AWS/Lambda",
    }
