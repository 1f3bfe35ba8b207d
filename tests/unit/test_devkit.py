"""The devkit helpers the other tests rely on: the fake Lambda clock, attribute spellings and
redeliveries."""

from __future__ import annotations

from devkit.events import (
    binary_attribute,
    kafka_event,
    kafka_record,
    lambda_attributes,
    received_attributes,
    redelivery,
    sqs_event,
    sqs_record,
    string_attribute,
)
from devkit.lambda_context import FakeLambdaContext
from devkit.payloads import payment


def test_the_fake_lambda_context_counts_down_on_its_clock() -> None:
    now = [100.0]
    context = FakeLambdaContext(3_000, clock=lambda: now[0])
    assert context.get_remaining_time_in_millis() == 3_000
    now[0] += 1.25
    assert context.get_remaining_time_in_millis() == 1_750
    now[0] += 60
    assert context.get_remaining_time_in_millis() == 0


def test_lambda_and_receive_message_attributes_convert_both_ways() -> None:
    lambda_shape = {"trace-id": string_attribute("t-1"), "signature": binary_attribute(b"\x00\xff")}
    received = received_attributes(lambda_shape)
    assert received == {
        "trace-id": {"DataType": "String", "StringValue": "t-1"},
        "signature": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
    }
    assert lambda_attributes(received) == lambda_shape


def test_sqs_redelivery_is_the_reported_messages_again() -> None:
    first, second = sqs_record("{}", message_id="m-1"), sqs_record("{}", message_id="m-2")
    event = sqs_event(first, second)
    assert redelivery(event, {"batchItemFailures": []}) is None
    again = redelivery(event, {"batchItemFailures": [{"itemIdentifier": "m-2"}]})
    assert again is not None
    (record,) = again["Records"]
    assert record["messageId"] == "m-2"
    assert record["attributes"]["ApproximateReceiveCount"] == "2"
    assert record["receiptHandle"] != second["receiptHandle"]


def test_kafka_redelivery_is_every_record_of_a_partition_from_the_first_reported_offset() -> None:
    event = kafka_event(
        [kafka_record(0, offset, payment(offset)) for offset in (1, 2, 3)]
        + [kafka_record(1, 7, payment(7))]
    )
    response = {
        "batchItemFailures": [{"itemIdentifier": {"topic-partition": "payments-0", "offset": 2}}]
    }
    again = redelivery(event, response)
    assert again is not None
    assert {
        partition: [r["offset"] for r in records] for partition, records in again["records"].items()
    } == {"payments-0": [2, 3]}
