"""What template.yaml's `InboxDashboard` must show, checked against the template and the metrics
the library really emits.

`dashboard_problems` resolves the dashboard's body with the template's own conditions (one
parameter set per template variant), parses it as CloudWatch reads it (JSON), and names:
- a `LambdaInbox` metric, or a dimension set, that nothing emits (the widget would stay empty);
- a consumer without its outcome counts or its commit latency;
- a dead-letter or failure queue without its depth;
- an alarm of the variant missing from the alarm widget, an alarm there that the variant lacks,
  or an alarm widget without 1 to 100 alarms;
- the relay's oldest item, its counts per destination kind (relayed, failed, sent again), the
  reaper's runs and reaped leases, when missing;
- a widget off the 24-column grid or on top of another.
tests/unit/app/test_dashboard.py runs it on both variants and on broken bodies it must catch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from devkit.paths import REPO_ROOT
from lambda_inbox._outbox.destinations import KINDS
from lambda_inbox_tools.local.cfn import Resolver

NAMESPACE = "LambdaInbox"
CONSUMER_METRICS = (
    "MessagesCommitted",
    "MessagesDuplicate",
    "MessagesDeadLettered",
    "MessagesFailed",
    "CommitLatency",
)
#: Queues an operator must watch: dead-letter queues and on-failure destinations.
WATCHED_QUEUE = re.compile(r"-(dlq|failures)$")
GRID_COLUMNS = 24
#: The outbox relay's destination kinds, each with its own relayed, failed and retried counts.
DESTINATION_KINDS = KINDS
#: CloudWatch's dashboard body structure: an alarm status widget holds 1 to 100 alarm ARNs.
MAX_ALARMS_PER_WIDGET = 100


@dataclass(frozen=True)
class Metric:
    namespace: str
    name: str
    dimensions: tuple[tuple[str, str], ...]  # sorted

    @property
    def dimension_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.dimensions)


def dashboard_body(
    template: Mapping[str, Any],
    parameters: Mapping[str, str],
    resource: str = "InboxDashboard",
) -> dict[str, Any]:
    """The body of dashboard `resource` as CloudWatch would receive it for a stack with
    `parameters`."""
    resolver = _resolver(template, parameters)
    body = resolver.resolve(template["Resources"][resource]["Properties"]["DashboardBody"])
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def dashboard_metrics(body: Mapping[str, Any]) -> set[Metric]:
    """Every metric a widget of `body` plots (one `[namespace, name, dim, value, ..., {opts}]`)."""
    found: set[Metric] = set()
    for widget in body["widgets"]:
        for entry in widget["properties"].get("metrics", []):
            fields = [field for field in entry if not isinstance(field, dict)]
            namespace, name, *pairs = fields
            dimensions = tuple(sorted(zip(pairs[::2], pairs[1::2], strict=True)))
            found.add(Metric(namespace, name, dimensions))
    return found


def dashboard_problems(
    template: Mapping[str, Any],
    parameters: Mapping[str, str],
    body: Mapping[str, Any],
    emitted: Iterable[tuple[str, frozenset[str]]],
) -> list[str]:
    """Everything `body` lacks or gets wrong for the stack `template` makes with `parameters`.
    `emitted`: the (metric name, dimension names) pairs the library writes to `LambdaInbox`."""
    resolver = _resolver(template, parameters)
    resources: Mapping[str, Any] = template["Resources"]
    plotted = dashboard_metrics(body)
    emitted_set = set(emitted)
    problems = [
        f"{metric.name} {sorted(metric.dimension_names)} is never emitted"
        for metric in sorted(plotted, key=repr)
        if metric.namespace == NAMESPACE
        and (metric.name, metric.dimension_names) not in emitted_set
    ]
    for consumer, service in consumers(resources):
        dimensions = tuple(sorted({"consumer": consumer, "service": service}.items()))
        problems += [
            f"consumer {consumer}: no {name}"
            for name in CONSUMER_METRICS
            if Metric(NAMESPACE, name, dimensions) not in plotted
        ]
    for logical_id, resource in resources.items():
        if not resolver.included(logical_id):
            continue
        if resource["Type"] == "AWS::SQS::Queue":
            queue = resolver.physical_name(logical_id)
            depth = Metric("AWS/SQS", "ApproximateNumberOfMessagesVisible", (("QueueName", queue),))
            if WATCHED_QUEUE.search(queue) and depth not in plotted:
                problems.append(f"queue {queue}: no depth")
    problems += _alarm_problems(resolver, resources, body)
    problems += [
        f"no {metric.name} {dict(metric.dimensions)}"
        for metric in _operator_metrics(resolver)
        if metric not in plotted
    ]
    return problems + _layout_problems(body["widgets"])


def consumers(resources: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(consumer name, POWERTOOLS_SERVICE_NAME) of every function built on `InboxConsumer`."""
    found = []
    for resource in resources.values():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        code = REPO_ROOT / str(resource["Properties"]["CodeUri"]) / "app.py"
        match = re.search(r'InboxConsumer\(\s*"([^"]+)"', code.read_text(encoding="utf-8"))
        if match:
            variables = resource["Properties"]["Environment"]["Variables"]
            found.append((match.group(1), str(variables["POWERTOOLS_SERVICE_NAME"])))
    return found


def _alarm_problems(
    resolver: Resolver, resources: Mapping[str, Any], body: Mapping[str, Any]
) -> list[str]:
    shown = {
        arn
        for widget in body["widgets"]
        if widget["type"] == "alarm"
        for arn in widget["properties"]["alarms"]
    }
    expected = {
        resolver.arn(logical_id): logical_id
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::CloudWatch::Alarm" and resolver.included(logical_id)
    }
    missing = [
        f"alarm widget {widget['properties'].get('title')!r} holds {count} alarms, not 1 to 100"
        for widget in body["widgets"]
        if widget["type"] == "alarm"
        and not 1 <= (count := len(widget["properties"]["alarms"])) <= MAX_ALARMS_PER_WIDGET
    ]
    missing += [f"alarm {expected[arn]}: not shown" for arn in sorted(expected.keys() - shown)]
    return missing + [
        f"alarm widget names {arn}, not in this stack" for arn in shown - expected.keys()
    ]


def _layout_problems(widgets: list[dict[str, Any]]) -> list[str]:
    """Widgets off the grid or on top of each other (CloudWatch would move them around)."""
    problems: list[str] = []
    taken: dict[tuple[int, int], str] = {}
    overlapping: dict[tuple[str, str], None] = {}  # ordered, each pair once
    for widget in widgets:
        title = str(widget["properties"].get("title") or widget["type"])
        x, y, width, height = (widget[k] for k in ("x", "y", "width", "height"))
        if x + width > GRID_COLUMNS:
            problems.append(f"widget {title!r} leaves the {GRID_COLUMNS}-column grid")
        for column in range(x, x + width):
            for row in range(y, y + height):
                if (column, row) in taken:
                    overlapping[(taken[(column, row)], title)] = None
                taken.setdefault((column, row), title)
    return problems + [f"widgets {a!r} and {b!r} overlap" for a, b in overlapping]


def _operator_metrics(resolver: Resolver) -> list[Metric]:
    reaper = resolver.physical_name("InboxReaperFunction")
    by_kind = [
        Metric(NAMESPACE, name, (("destination_kind", kind), ("service", "outbox-relay")))
        for kind in DESTINATION_KINDS
        for name in ("OutboxRelayed", "OutboxRelayFailures", "OutboxRelayRetries")
    ]
    return [
        *by_kind,
        Metric(NAMESPACE, "OutboxOldestItemAge", (("service", "outbox-relay"),)),
        Metric("AWS/Lambda", "Invocations", (("FunctionName", reaper),)),
        Metric(NAMESPACE, "Reaped", (("service", "inbox-reaper"),)),
    ]


def _resolver(template: Mapping[str, Any], parameters: Mapping[str, str]) -> Resolver:
    return Resolver(
        template, stack_name="lambda-inbox", parameters=parameters, sqs_endpoint="http://sqs"
    )
