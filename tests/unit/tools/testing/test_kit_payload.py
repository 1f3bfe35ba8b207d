"""The kit's `payload(record, envelope=...)` reads a record as the consumer with that envelope
reads it: through an SNS notification to its `Message`, through an EventBridge event to its
`detail`; without one, the body as it is."""

from __future__ import annotations

import pytest

from lambda_inbox_tools.testing import eventbridge_event, payload, sns_notification, sqs_record

ORDER = {"event_id": "evt-1", "order_id": "O-1"}


def test_payload_reads_through_the_producer_s_envelope() -> None:
    notified = sqs_record(sns_notification(ORDER))
    assert payload(notified, envelope="sns") == ORDER
    assert payload(notified)["Type"] == "Notification"
    routed = sqs_record(eventbridge_event(ORDER))
    assert payload(routed, envelope="eventbridge") == ORDER
    assert payload(routed)["detail-type"] == "OrderPlaced"
    assert payload(sqs_record(ORDER)) == ORDER


def test_an_envelope_payload_cannot_read_is_refused() -> None:
    with pytest.raises(ValueError, match='"sns", "eventbridge" or None'):
        payload(sqs_record(ORDER), envelope="s3")  # type: ignore[arg-type]
