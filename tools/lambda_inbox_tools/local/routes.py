"""What feeds a template's queues besides a producer's own sends: SNS topics with their
`AWS::SNS::Subscription`s of protocol `sqs` (`RawMessageDelivery`, `FilterPolicy`,
`FilterPolicyScope`) and EventBridge rules (`AWS::Events::Rule`, `EventPattern`) with SQS
targets, created on the moto server, whose SNS and EventBridge deliver to its SQS queues as AWS
does (the notification's JSON, or the raw message; the event's JSON).

What they cannot carry locally (other protocols, other target kinds, scheduled rules) is listed
by resource and skipped, as the rest of the local stack does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .cfn import Resolver

ROUTE_RESOURCES = frozenset(
    {"AWS::SNS::Topic", "AWS::SNS::Subscription", "AWS::Events::Rule", "AWS::Events::EventBus"}
)
DEFAULT_BUS = "default"


@dataclass(frozen=True)
class TopicSpec:
    logical_id: str
    name: str
    arn: str
    fifo: bool = False


@dataclass(frozen=True)
class SubscriptionSpec:
    """A queue subscribed to a topic."""

    logical_id: str
    topic_arn: str
    queue_arn: str
    raw_message_delivery: bool
    filter_policy: Mapping[str, Any] | None = None
    filter_policy_scope: str | None = None


@dataclass(frozen=True)
class RuleSpec:
    """An EventBridge rule on a bus, with the queues it targets."""

    logical_id: str
    name: str
    bus: str
    pattern: Mapping[str, Any]
    queue_arns: tuple[str, ...]


@dataclass
class Routes:
    topics: list[TopicSpec] = field(default_factory=list)
    subscriptions: list[SubscriptionSpec] = field(default_factory=list)
    buses: list[str] = field(default_factory=list)
    rules: list[RuleSpec] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.topics or self.rules)


def read_route(
    routes: Routes,
    resolver: Resolver,
    logical_id: str,
    kind: str,
    properties: Mapping[str, Any],
    skipped: list[str],
) -> None:
    """Add the resource `logical_id` of `kind` (one of ROUTE_RESOURCES) to `routes`, or say in
    `skipped` why it is not run locally."""
    if kind == "AWS::SNS::Topic":
        fifo = str(properties.get("FifoTopic", "false")).lower() == "true"
        name = resolver.physical_name(logical_id)
        routes.topics.append(TopicSpec(logical_id, name, resolver.arn(logical_id), fifo))
    elif kind == "AWS::Events::EventBus":
        routes.buses.append(str(properties.get("Name") or resolver.physical_name(logical_id)))
    elif kind == "AWS::SNS::Subscription":
        if str(properties.get("Protocol", "")).lower() != "sqs":
            skipped.append(f"{logical_id} (protocol {properties.get('Protocol')}): not emulated")
            return
        routes.subscriptions.append(
            SubscriptionSpec(
                logical_id,
                topic_arn=str(properties["TopicArn"]),
                queue_arn=str(properties["Endpoint"]),
                raw_message_delivery=str(properties.get("RawMessageDelivery", "false")).lower()
                == "true",
                filter_policy=_document(properties.get("FilterPolicy")),
                filter_policy_scope=properties.get("FilterPolicyScope"),
            )
        )
    elif kind == "AWS::Events::Rule":
        _rule(routes, resolver, logical_id, properties, skipped)


def _rule(
    routes: Routes,
    resolver: Resolver,
    logical_id: str,
    properties: Mapping[str, Any],
    skipped: list[str],
) -> None:
    pattern = _document(properties.get("EventPattern"))
    if pattern is None:
        skipped.append(f"{logical_id} (AWS::Events::Rule without EventPattern): not emulated")
        return
    queues = []
    for target in properties.get("Targets") or []:
        arn = str(target.get("Arn", ""))
        if arn.startswith("arn:aws:sqs:"):
            queues.append(arn)
        else:
            skipped.append(f"{logical_id} target {target.get('Id')}: only SQS targets run locally")
    bus = str(properties.get("EventBusName") or DEFAULT_BUS).rsplit("/", 1)[-1]
    name = str(properties.get("Name") or resolver.physical_name(logical_id))
    routes.rules.append(RuleSpec(logical_id, name, bus, pattern, tuple(queues)))


def _document(value: Any) -> Mapping[str, Any] | None:
    """A JSON document given as an object or as its text (CloudFormation takes both)."""
    if value is None:
        return None
    if isinstance(value, str):
        loaded = json.loads(value)
        return loaded if isinstance(loaded, dict) else None
    return dict(value) if isinstance(value, Mapping) else None


def create_routes(sns: Any, events: Any, routes: Routes) -> None:
    """The topics, subscriptions, buses and rules of `routes`, on the moto server's SNS and
    EventBridge (`sns`, `events`)."""
    for topic in routes.topics:
        attributes = {"FifoTopic": "true"} if topic.fifo else {}
        sns.create_topic(Name=topic.name, Attributes=attributes)
    for subscription in routes.subscriptions:
        attributes = {"RawMessageDelivery": str(subscription.raw_message_delivery).lower()}
        if subscription.filter_policy is not None:
            attributes["FilterPolicy"] = json.dumps(subscription.filter_policy)
        if subscription.filter_policy_scope:
            attributes["FilterPolicyScope"] = str(subscription.filter_policy_scope)
        sns.subscribe(
            TopicArn=subscription.topic_arn,
            Protocol="sqs",
            Endpoint=subscription.queue_arn,
            Attributes=attributes,
        )
    for bus in routes.buses:
        if bus != DEFAULT_BUS:
            events.create_event_bus(Name=bus)
    for rule in routes.rules:
        events.put_rule(
            Name=rule.name, EventBusName=rule.bus, EventPattern=json.dumps(rule.pattern)
        )
        if rule.queue_arns:
            events.put_targets(
                Rule=rule.name,
                EventBusName=rule.bus,
                Targets=[{"Id": f"queue-{n}", "Arn": arn} for n, arn in enumerate(rule.queue_arns)],
            )
