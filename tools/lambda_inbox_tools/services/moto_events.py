"""moto's EventBridge, made to deliver events to a rule's targets as AWS does.

AWS delivers an event to a target without an `InputTransformer` as the whole event: `version`,
`id`, `detail-type`, `source`, `account`, `time`, `region`, `resources`, `detail`
(tests/fixtures/aws/eventbridge-event.json). moto (5.2) builds what a target receives from a
default input template that leaves out `account`, which Powertools' `EventBridgeModel` requires,
so a consumer with `envelope="eventbridge"` would refuse every locally routed event. The event
moto matches against the rule does carry `account`; only the default template drops it.
`deliver_events_as_aws_does()` adds it to that template, once, in the process that runs the
moto server (the local stack's and the test fixtures' servers are threads of it).

tests/integration/local/test_routes.py keeps moto's own template under test: when moto sends
`account` itself, that test says so and this module can go.
"""

from __future__ import annotations

#: What moto's default template lacks of AWS's event, and where it goes (after `version`).
_ACCOUNT_FIELD = '"account": "<account>", '
_ANCHOR = '"version": "0", '


def moto_template() -> str:
    """moto's default input template as moto ships it (before or without the patch)."""
    from moto.events.utils import EventTemplateParser

    template: str = getattr(
        EventTemplateParser,
        "_moto_default_template",
        EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE,
    )
    return template


def with_account(template: str) -> str:
    """`template` with the event's `account` (unchanged when it has one, or has no anchor)."""
    if "<account>" in template or _ANCHOR not in template:
        return template
    return template.replace(_ANCHOR, _ANCHOR + _ACCOUNT_FIELD, 1)


def deliver_events_as_aws_does() -> None:
    """Make moto's EventBridge send `account` to rule targets (idempotent)."""
    from moto.events.utils import EventTemplateParser

    original = moto_template()
    EventTemplateParser._moto_default_template = original  # type: ignore[attr-defined]
    EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE = with_account(original)
