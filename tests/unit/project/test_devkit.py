"""The devkit helpers the other tests rely on: the fake Lambda clock, attribute spellings,
redeliveries, replayed dead letters, the SQS and DynamoDB limit hooks and the in-memory
services."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError, ParamValidationError

from devkit.app_state import AppState
from devkit.captured import capture_requests, replay
from devkit.events import (
    binary_attribute,
    event_after,
    kafka_event,
    kafka_record,
    lambda_attributes,
    received_attributes,
    replayed,
    sqs_event,
    sqs_record,
    string_attribute,
)
from devkit.memory_aws import MemoryAws
from devkit.payloads import payment
from lambda_inbox_tools.services.offline import REGION
from lambda_inbox_tools.testing.context import FakeLambdaContext
from lambda_inbox_tools.testing.limits import enforce_dynamodb_key_limits, enforce_sqs_limits

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import PutTypeDef
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
    assert event_after(event, {"batchItemFailures": []}) is None
    again = event_after(event, {"batchItemFailures": [{"itemIdentifier": "m-2"}]})
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
    again = event_after(event, response)
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


def memory_state() -> tuple[MemoryAws, AppState]:
    memory = MemoryAws()
    dynamodb, sqs = memory.client("dynamodb"), memory.client("sqs")
    state = AppState.created(dynamodb, sqs, dlq="dlq")
    return memory, state


def test_memory_aws_answers_conditions_and_transactions_as_dynamodb_does() -> None:
    _, aws = memory_state()
    client = aws.dynamodb
    condition: dict[str, Any] = {
        "ConditionExpression": "attribute_not_exists(pk) OR expires_at < :now OR #s = :failed",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": {":now": {"N": "100"}, ":failed": {"S": "FAILED"}},
    }
    live: dict[str, Any] = {
        "pk": {"S": "c#k"},
        "status": {"S": "COMPLETED"},
        "expires_at": {"N": "200"},
    }
    client.put_item(TableName="inbox", Item=live, **condition)
    with pytest.raises(client.exceptions.ConditionalCheckFailedException) as failed:
        client.put_item(TableName="inbox", Item=live, **condition)
    assert "Item" not in failed.value.response  # only when asked for
    with pytest.raises(client.exceptions.ConditionalCheckFailedException) as failed:
        client.put_item(
            TableName="inbox", Item=live, **condition, ReturnValuesOnConditionCheckFailure="ALL_OLD"
        )
    assert failed.value.response["Item"] == live  # type: ignore[typeddict-item]
    domain: dict[str, Any] = {
        "Put": {"TableName": "domain", "Item": {"pk": {"S": "A"}, "sk": {"S": "V"}}}
    }
    inbox: dict[str, Any] = {
        "Put": {
            "TableName": "inbox",
            "Item": live,
            **condition,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(TransactItems=[domain, inbox])  # type: ignore[list-item]
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    response: dict[str, Any] = dict(cancelled.value.response)
    reasons = response["CancellationReasons"]
    assert [reason["Code"] for reason in reasons] == ["None", "ConditionalCheckFailed"]
    assert reasons[1]["Item"] == live
    assert aws.item("A", "V") is None  # all or nothing
    expired = {**live, "expires_at": {"N": "50"}}
    client.put_item(TableName="inbox", Item=expired)
    client.transact_write_items(TransactItems=[domain, inbox])  # type: ignore[list-item]
    assert aws.item("A", "V") is not None
    with pytest.raises(ClientError, match="maximum allowed size"):
        client.put_item(
            TableName="domain", Item={**domain["Put"]["Item"], "x": {"S": "n" * 410_000}}
        )
    with pytest.raises(ClientError, match="key of 2049 bytes"):
        client.get_item(TableName="inbox", Key={"pk": {"S": "k" * 2049}})
    with pytest.raises(ParamValidationError):
        client.put_item(TableName="inbox", Item={"pk": "not an attribute value"})


def test_memory_aws_keeps_ttl_settings_and_client_request_tokens_as_dynamodb_does() -> None:
    """`DescribeTimeToLive` says what `UpdateTimeToLive` set (nothing expires: the check emulates
    TTL); a transaction sent again with its token changes nothing, and one with other actions
    under the same token is refused."""
    _, aws = memory_state()
    client = aws.dynamodb
    described = client.describe_time_to_live(TableName="inbox")["TimeToLiveDescription"]
    assert described == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}
    plain = client.describe_time_to_live(TableName="domain")["TimeToLiveDescription"]
    assert plain == {"TimeToLiveStatus": "DISABLED"}

    def add(sk: str, token: str) -> None:
        update: Any = {
            "TableName": "domain",
            "Key": {"pk": {"S": "A"}, "sk": {"S": sk}},
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
        client.transact_write_items(TransactItems=[{"Update": update}], ClientRequestToken=token)

    add("V", "token-1")
    add("V", "token-1")
    add("V", "token-2")
    item = aws.item("A", "V")
    assert item is not None and item["n"] == {"N": "2"}
    with pytest.raises(ClientError, match="IdempotentParameterMismatch"):
        add("W", "token-1")


def test_memory_aws_queues_enforce_sqs_limits_and_fifo_deduplication() -> None:
    memory, aws = memory_state()
    assert aws.fifo_dlq_url is not None
    with pytest.raises(ClientError, match="InvalidParameterValue"):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="")
    with pytest.raises(ClientError, match="MessageGroupId"):
        aws.sqs.send_message(QueueUrl=aws.fifo_dlq_url, MessageBody="x")
    for _ in range(2):
        aws.sqs.send_message(
            QueueUrl=aws.fifo_dlq_url,
            MessageBody="once",
            MessageGroupId="g",
            MessageDeduplicationId="d-1",
            MessageAttributes={"a": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}},
        )
    (letter,) = aws.dead_letters(fifo=True)
    assert letter["Body"] == "once"
    assert letter["MessageAttributes"]["a"]["BinaryValue"] == b"\x00\xff"
    assert replayed(letter).body == b"once"
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="kept")
    assert [m["Body"] for m in memory.drain(aws.dlq_url)] == ["kept"]
    assert memory.drain(aws.dlq_url) == []


def test_captured_requests_are_answered_in_process_then_replayed_for_real(aws: AppState) -> None:
    # Captured through a client whose endpoint refuses connections: a request sent would fail.
    nowhere = boto3.client(
        "dynamodb",
        region_name=REGION,
        endpoint_url="http://127.0.0.1:9",
        config=Config(retries={"total_max_attempts": 1}),
    )
    key = {"pk": {"S": "captured"}, "sk": {"S": "V"}}
    put: PutTypeDef = {
        "TableName": aws.domain,
        "Item": key,
        "ConditionExpression": "attribute_not_exists(pk)",
    }

    def batch() -> None:
        read = nowhere.batch_get_item(RequestItems={aws.domain: {"Keys": [key]}})
        assert read["Responses"] == {}
        nowhere.transact_write_items(TransactItems=[{"Put": put}])

    requests = capture_requests(nowhere, batch)
    assert [name for name, _ in requests] == ["BatchGetItem", "TransactWriteItems"]
    with pytest.raises(EndpointConnectionError):  # the hook is gone once captured
        nowhere.batch_get_item(RequestItems={aws.domain: {"Keys": [key]}})
    replay(aws.dynamodb, requests)
    assert aws.dynamodb.get_item(TableName=aws.domain, Key=key)["Item"] == key
    with pytest.raises(ClientError, match="TransactionCanceled"):  # sent for real this time
        replay(aws.dynamodb, requests[1:])
