"""The devkit helpers the other tests rely on: the fake Lambda clock, attribute spellings,
redeliveries, replayed dead letters and the SQS and DynamoDB limit hooks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from botocore.exceptions import ClientError

from devkit.app_state import AppState
from devkit.events import (
    binary_attribute,
    kafka_event,
    kafka_record,
    lambda_attributes,
    received_attributes,
    redelivery,
    replayed,
    sqs_event,
    sqs_record,
    string_attribute,
)
from devkit.lambda_context import FakeLambdaContext
from devkit.limits import enforce_dynamodb_key_limits, enforce_sqs_limits
from devkit.payloads import payment

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef


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


def test_the_limit_hooks_refuse_what_sqs_and_dynamodb_refuse_before_moto_sees_it(
    aws: AppState,
) -> None:
    enforce_sqs_limits(aws.sqs)
    enforce_dynamodb_key_limits(aws.dynamodb)
    with pytest.raises(ClientError, match="InvalidParameterValue"):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="a\x00")
    entries: list[SendMessageBatchRequestEntryTypeDef] = [
        {"Id": "1", "MessageBody": "fine"},
        {"Id": "2", "MessageBody": "x", "MessageAttributes": {"a": {"DataType": "String"}}},
    ]
    with pytest.raises(ClientError, match="entry '2'"):
        aws.sqs.send_message_batch(QueueUrl=aws.dlq_url, Entries=entries)
    with pytest.raises(ClientError, match="TooManyEntriesInBatchRequest"):
        aws.sqs.send_message_batch(
            QueueUrl=aws.dlq_url,
            Entries=[{"Id": str(n), "MessageBody": "m"} for n in range(11)],
        )
    aws.sqs.send_message_batch(QueueUrl=aws.dlq_url, Entries=entries[:1])
    with pytest.raises(ClientError, match="key of 2049 bytes"):
        aws.dynamodb.put_item(
            TableName=aws.domain, Item={"pk": {"S": "k" * 2049}, "sk": {"S": "V"}}
        )
    with pytest.raises(ClientError, match="not UTF-8"):
        aws.dynamodb.get_item(TableName=aws.inbox, Key={"pk": {"S": "\ud800"}})
    assert [letter["Body"] for letter in aws.dead_letters()] == ["fine"]


def test_a_replayed_dead_letter_gives_back_its_body_and_attributes(aws: AppState) -> None:
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody="plain",
        MessageAttributes={"trace": {"DataType": "String", "StringValue": "t-1"}},
    )
    (letter,) = aws.dead_letters()
    message = replayed(letter)
    assert message.body == b"plain"
    assert message.attributes == {"trace": "t-1"}
