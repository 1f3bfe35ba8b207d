"""`InboxBatchProcessor`: a Powertools batch handler (`process_partial_response`) committing
through the inbox, a batch at a time, on in-memory AWS (`devkit.memory_aws`); its requests
counted at botocore's hooks (`devkit.meters`). The effectively-once check of the documented
migration runs on moto in tests/unit/docs/test_doc_snippets.py and on DynamoDB Local in
tests/integration/test_powertools_batch.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from pydantic import BaseModel, Json

from devkit.app_state import AppState
from lambda_inbox import Clients, ConfigurationError, InboxBatchProcessor, InboxConfig, UnitOfWork
from lambda_inbox_tools.testing import (
    FakeLambdaContext,
    delivered_again,
    dynamodb_stream_event,
    dynamodb_stream_record,
    kafka_event,
    kafka_record,
    kinesis_event,
    kinesis_record,
    sqs_event,
    sqs_record,
)


def processor_for(aws: AppState, event_type: Any = EventType.SQS, **options: Any) -> Any:
    config = InboxConfig(
        consumer="orders", inbox_table=aws.inbox, dead_letter_queue_url=aws.dlq_url
    )
    clients = Clients(dynamodb=aws.dynamodb, sqs=aws.sqs)
    return InboxBatchProcessor(event_type, name="orders", clients=clients, config=config, **options)


def requests_of(client: Any) -> list[str]:
    """The operations `client` calls from now on (at `before-parameter-build`: the memory
    answers before botocore's later hooks)."""
    calls: list[str] = []
    client.meta.events.register(
        "before-parameter-build", lambda model, **_: calls.append(model.name)
    )
    return calls


def counting(aws: AppState) -> Any:
    def record_handler(record: SQSRecord, uow: UnitOfWork) -> None:
        aws.count_applied(uow, json.loads(record.body)["order_id"])

    return record_handler


def orders(count: int, prefix: str = "o") -> list[dict[str, Any]]:
    return [
        sqs_record({"event_id": f"e-{prefix}{n}", "order_id": f"{prefix}{n}"}) for n in range(count)
    ]


def test_ten_new_records_are_one_request_and_a_redelivery_applies_nothing(aws: AppState) -> None:
    processor = processor_for(aws, key="event_id")
    handler = counting(aws)
    records = orders(10)
    calls = requests_of(processor.consumer.dynamodb)
    response = process_partial_response(sqs_event(*records), handler, processor)
    assert response == {"batchItemFailures": []}
    assert calls == ["TransactWriteItems"]
    assert len(processor.success_messages) == 10
    assert isinstance(processor.success_messages[0], SQSRecord)
    calls.clear()
    again = [delivered_again(record) for record in records]
    assert process_partial_response(sqs_event(*again), handler, processor) == response
    assert calls == ["BatchGetItem"]  # read first: all ten are duplicates
    assert [aws.applied(f"o{n}") for n in range(10)] == [1] * 10


def test_a_handler_error_reports_its_record_and_commits_the_others(aws: AppState) -> None:
    def record_handler(record: SQSRecord, uow: UnitOfWork) -> None:
        order = json.loads(record.body)
        if order["order_id"] == "o1":
            raise RuntimeError("downstream outage")
        aws.count_applied(uow, order["order_id"])

    processor = processor_for(aws)
    records = orders(3)
    response = process_partial_response(sqs_event(*records), record_handler, processor)
    assert response == {"batchItemFailures": [{"itemIdentifier": records[1]["messageId"]}]}
    assert [r.message_id for r in processor.fail_messages] == [records[1]["messageId"]]
    assert len(processor.success_messages) == len(processor.exceptions) + 1
    assert [aws.applied(f"o{n}") for n in range(3)] == [1, 0, 1]


def test_a_batch_that_fails_entirely_raises_as_batch_processor_does(aws: AppState) -> None:
    def record_handler(record: SQSRecord, uow: UnitOfWork) -> None:
        raise RuntimeError("down")

    with pytest.raises(BatchProcessingError, match="All records failed"):
        process_partial_response(sqs_event(*orders(2)), record_handler, processor_for(aws))
    quiet = processor_for(aws, raise_on_entire_batch_failure=False)
    response = process_partial_response(sqs_event(*orders(2, "q")), record_handler, quiet)
    assert len(response["batchItemFailures"]) == 2


class Order(BaseModel):
    order_id: str


class OrderRecord(SqsRecordModel):
    body: Json[Order]


def test_the_model_reads_each_record_and_a_refused_one_is_dead_lettered(aws: AppState) -> None:
    seen: list[Any] = []

    def record_handler(record: OrderRecord, uow: UnitOfWork) -> None:
        seen.append(record.body.order_id)
        aws.count_applied(uow, record.body.order_id)

    processor = processor_for(aws, model=OrderRecord)
    good, bad = sqs_record({"order_id": "o1"}), sqs_record({"no": "order"})
    response = process_partial_response(sqs_event(good, bad), record_handler, processor)
    assert response == {"batchItemFailures": []}  # the poison is in the DLQ, with its body
    assert seen == ["o1"]
    (dead,) = aws.dead_letters()
    assert json.loads(dead["Body"]) == {"no": "order"}
    assert dead["MessageAttributes"]["inbox-error-code"]["StringValue"] == "invalid_payload"


def test_the_lambda_context_is_passed_when_the_handler_takes_it(aws: AppState) -> None:
    contexts: list[Any] = []

    def record_handler(record: SQSRecord, uow: UnitOfWork, lambda_context: Any) -> None:
        contexts.append(lambda_context)

    context: Any = FakeLambdaContext()
    process_partial_response(sqs_event(*orders(1)), record_handler, processor_for(aws), context)
    assert contexts == [context]


def test_a_record_handler_without_a_unit_of_work_is_refused_naming_the_way(aws: AppState) -> None:
    def record_handler(record: SQSRecord) -> None: ...

    with pytest.raises(ConfigurationError, match=r"record_handler must take `uow`.*BatchProcessor"):
        process_partial_response(sqs_event(*orders(1)), record_handler, processor_for(aws))


def test_kinesis_and_dynamodb_stream_batches(aws: AppState) -> None:
    kinds: list[str] = []

    def record_handler(record: Any, uow: UnitOfWork) -> None:
        kinds.append(type(record).__name__)

    kinesis = processor_for(aws, EventType.KinesisDataStreams)
    event = kinesis_event([kinesis_record(1, {"order_id": "k"})])
    assert process_partial_response(event, record_handler, kinesis) == {"batchItemFailures": []}
    streams = processor_for(aws, EventType.DynamoDBStreams)
    inserted = dynamodb_stream_record(1, {"pk": "o"}, new_image={"pk": "o"})
    event = dynamodb_stream_event([inserted])
    assert process_partial_response(event, record_handler, streams) == {"batchItemFailures": []}
    assert kinds == ["KinesisStreamRecord", "DynamoDBRecord"]


def test_kafka_batches_need_the_powertools_that_reads_them(aws: AppState) -> None:
    """Powertools' batch utility reads Kafka events from 3.26.0 (`EventType.Kafka`); on an
    older one (`make check-lowest`) the processor says which version it needs."""
    if "Kafka" not in EventType.__members__:
        with pytest.raises(ConfigurationError, match=r"aws-lambda-powertools>=3\.26\.0"):
            processor_for(aws, "Kafka")
        return
    offsets: list[int] = []

    def record_handler(record: Any, uow: UnitOfWork) -> None:
        offsets.append(record.offset)

    processor = processor_for(aws, "Kafka")
    records = [kafka_record(0, 5, {"a": 1}), kafka_record(1, 7, {"a": 2})]
    response = process_partial_response(kafka_event(records), record_handler, processor)
    assert response == {"batchItemFailures": []}
    assert sorted(offsets) == [5, 7]


def test_an_unknown_event_type_is_refused(aws: AppState) -> None:
    with pytest.raises(ConfigurationError, match="event_type must be one of SQS"):
        processor_for(aws, "Queue")
