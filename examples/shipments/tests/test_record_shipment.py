"""record-shipment's own tests, written only with lambda-inbox's public API and its testing kit:
the template's tables and queues on DynamoDB Local and a moto server, SNS notifications built by
the kit as SNS puts them in the subscribed queue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lambda_inbox_tools.testing import LocalApp, sns_notification, sqs_event, sqs_record

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"


def shipments(app: LocalApp) -> dict[str, dict[str, Any]]:
    return {
        item["pk"].removeprefix("ORDER#"): {
            "tracking": item["tracking_number"],
            "carrier": item["carrier"],
            "by": item["inbox_consumer"],  # the item is the record: it names its consumer
        }
        for item in app.items("ShipmentsTable")
    }


def test_a_notification_sns_delivers_twice_registers_the_shipment_once(local_app: Any) -> None:
    app = local_app(TEMPLATE)
    record_shipment = app.function("RecordShipmentFunction")
    arn = app.stack.queue("ShipmentsQueue").arn
    body = sns_notification(
        {"order_id": "o-1", "tracking_number": "1Z999"},
        message_id="notification-1",
        attributes={"carrier": "ups"},
    )
    first, again = sqs_record(body, arn=arn), sqs_record(body, arn=arn)  # two SQS message ids

    assert record_shipment(sqs_event(first)) == {"batchItemFailures": []}
    assert record_shipment(sqs_event(again)) == {"batchItemFailures": []}

    shipped = {"o-1": {"tracking": "1Z999", "carrier": "ups", "by": "record-shipment"}}
    assert shipments(app) == shipped
    assert app.items("InboxTable") == []  # one put per notification, no inbox record

    # Another tracking number for a shipped order: a conflict, dead-lettered, the item kept.
    other = sns_notification(
        {"order_id": "o-1", "tracking_number": "1Z000"},
        message_id="notification-2",
        attributes={"carrier": "ups"},
    )
    assert record_shipment(sqs_event(sqs_record(other, arn=arn))) == {"batchItemFailures": []}
    (dead,) = app.messages("ShipmentsDLQ")
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "fingerprint_mismatch"
    assert shipments(app) == shipped


def test_a_body_that_is_not_a_notification_goes_to_the_dead_letter_queue_whole(
    local_app: Any,
) -> None:
    app = local_app(TEMPLATE)
    record_shipment = app.function("RecordShipmentFunction")
    arn = app.stack.queue("ShipmentsQueue").arn
    broken = '{"Type": "Notification", "Message": "{}"}'  # no MessageId, no TopicArn

    assert record_shipment(sqs_event(sqs_record(broken, arn=arn))) == {"batchItemFailures": []}

    (dead,) = app.messages("ShipmentsDLQ")
    assert dead["Body"] == broken
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "envelope_mismatch"
    assert shipments(app) == {}
