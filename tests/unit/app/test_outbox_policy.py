"""The outbox relay's publishing rights, as the docs' snippet and template.yaml grant them:
`sns:Publish` and `events:PutEvents` only, each on named resources, never on `*`. The check is
shown the broken policies it must name."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import pytest

from devkit.paths import REPO_ROOT
from lambda_inbox_tools.local.cfn import load_template

SNIPPET = REPO_ROOT / "docs/snippets/outbox-relay-policy.yaml"
PUBLISHING = {"sns:Publish": "TopicArn", "events:PutEvents": "EventBusArn"}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def publishing_problems(
    statements: Iterable[dict[str, Any]], expected: dict[str, str]
) -> list[str]:
    """What a relay's statements grant beyond `expected` (action -> the parameter naming its
    one resource), or fail to grant. SNS and EventBridge actions only are looked at."""
    problems: list[str] = []
    granted: set[str] = set()
    for statement in statements:
        actions = [
            a for a in _listed(statement.get("Action")) if a.split(":")[0] in ("sns", "events")
        ]
        if not actions:
            continue
        resources = _listed(statement.get("Resource"))
        for action in actions:
            if action not in expected:
                problems.append(f"{statement.get('Sid')}: grants {action}")
                continue
            granted.add(action)
            if resources != [{"Ref": expected[action]}]:
                problems.append(f"{statement.get('Sid')}: {action} on {resources}")
    problems += [f"no {action}" for action in expected if action not in granted]
    return problems


def snippet_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    policy = template["Resources"]["OutboxRelayPublishing"]["Properties"]["PolicyDocument"]
    statements: list[dict[str, Any]] = policy["Statement"]
    return statements


def test_the_snippet_grants_publishing_on_the_named_topic_and_bus_only() -> None:
    assert publishing_problems(snippet_statements(load_template(SNIPPET)), PUBLISHING) == []


def test_the_templates_relay_publishes_to_its_topic_only() -> None:
    """template.yaml's relay publishes the shipment notifications to ShipmentNotificationsTopic:
    `sns:Publish` on that topic, no other SNS or EventBridge right."""
    relay = load_template(REPO_ROOT / "template.yaml")["Resources"]["OutboxRelayFunction"]
    statements = [
        statement
        for policy in relay["Properties"]["Policies"]
        if isinstance(policy, dict) and "Statement" in policy
        for statement in policy["Statement"]
    ]
    expected = {"sns:Publish": "ShipmentNotificationsTopic"}
    assert statements and publishing_problems(statements, expected) == []


def _wildcard(statements: list[dict[str, Any]]) -> None:
    statements[0]["Resource"] = "*"


def _extra_action(statements: list[dict[str, Any]]) -> None:
    statements[1]["Action"] = ["events:PutEvents", "events:PutRule"]


def _no_bus(statements: list[dict[str, Any]]) -> None:
    del statements[1]


def _whole_service(statements: list[dict[str, Any]]) -> None:
    statements[0]["Action"] = "sns:*"


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (_wildcard, "PublishToTheTopic: sns:Publish on ['*']"),
        (_extra_action, "PutEventsOnTheBus: grants events:PutRule"),
        (_no_bus, "no events:PutEvents"),
        (_whole_service, "PublishToTheTopic: grants sns:*"),
    ],
)
def test_a_broader_or_missing_grant_is_named(edit: Any, problem: str) -> None:
    statements = copy.deepcopy(snippet_statements(load_template(SNIPPET)))
    edit(statements)
    assert problem in publishing_problems(statements, PUBLISHING)
