"""The baseline of `kinesis_batch.py`: a PaymentCaptured Kinesis consumer written with Powertools'
batch utility and idempotency, no lambda-inbox.

How a team would typically build payment-events on a Kinesis stream without this library:
Powertools `BatchProcessor(EventType.KinesisDataStreams)` for the partial batch response,
`@idempotent_function` per record with a `DynamoDBPersistenceLayer` (its own table, hash key
`id`), a pydantic model for the data, and the same domain writes as payment-events as separate
calls inside the idempotent function: a conditional `PutItem` of the payment, then an `UpdateItem`
adding to the customer's balance.

Environment (read at import, like the example functions): `IDEMPOTENCY_TABLE`, `DOMAIN_TABLE`;
boto3 honours `AWS_ENDPOINT_URL_DYNAMODB`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.kinesis_stream_event import (
    KinesisStreamRecord,
)
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from botocore.config import Config
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

DOMAIN_TABLE = os.environ["DOMAIN_TABLE"]
IDEMPOTENCY_TABLE = os.environ["IDEMPOTENCY_TABLE"]

#: The inbox consumer's client settings, so neither side gets another SDK retry policy.
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=3,
    read_timeout=10,
    tcp_keepalive=True,
)

processor = BatchProcessor(event_type=EventType.KinesisDataStreams)
dynamodb = boto3.client("dynamodb", config=CLIENT_CONFIG)
persistence_layer = DynamoDBPersistenceLayer(
    table_name=IDEMPOTENCY_TABLE,
    boto3_client=boto3.client("dynamodb", config=CLIENT_CONFIG),
)
idempotency_config = IdempotencyConfig(event_key_jmespath="event_id")


class PaymentCaptured(BaseModel):
    event_id: str = Field(min_length=1)
    payment_id: str = Field(min_length=1)
    order_id: str = Field(min_length=1)
    customer_id: str = Field(min_length=1)
    amount_cents: int = Field(gt=0)


@idempotent_function(  # type: ignore[untyped-decorator]
    data_keyword_argument="payment",
    config=idempotency_config,
    persistence_store=persistence_layer,
)
def record_payment(payment: dict[str, Any]) -> dict[str, Any]:
    customer = f"CUSTOMER#{payment['customer_id']}"
    dynamodb.put_item(
        TableName=DOMAIN_TABLE,
        Item={
            "pk": {"S": customer},
            "sk": {"S": f"PAYMENT#{payment['payment_id']}"},
            "amount_cents": {"N": str(payment["amount_cents"])},
            "order_id": {"S": payment["order_id"]},
            "event_id": {"S": payment["event_id"]},
        },
        ConditionExpression="attribute_not_exists(pk)",
    )
    dynamodb.update_item(
        TableName=DOMAIN_TABLE,
        Key={"pk": {"S": customer}, "sk": {"S": "BALANCE"}},
        UpdateExpression="ADD balance_cents :amount, payments :one",
        ExpressionAttributeValues={
            ":amount": {"N": str(payment["amount_cents"])},
            ":one": {"N": "1"},
        },
    )
    return {"outcome": "credited"}


def record_handler(record: KinesisStreamRecord) -> dict[str, Any]:
    payment = PaymentCaptured.model_validate_json(record.kinesis.data_as_bytes())
    return record_payment(payment=payment.model_dump())  # type: ignore[no-any-return]


def handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    idempotency_config.register_lambda_context(context)
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
