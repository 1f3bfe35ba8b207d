"""The baseline: an OrderPlaced SQS consumer written with Powertools idempotency, no lambda-inbox.

This is how a team would typically build the order-events consumer without this library:
Powertools `BatchProcessor` for partial batch responses, `@idempotent_function` per record with
a `DynamoDBPersistenceLayer` (its own table, hash key `id`), a pydantic model for the body, and
the domain writes as separate calls inside the idempotent function: per line a conditional
`UpdateItem` of the stock, then a conditional `PutItem` of the shipment, then a conditional
`PutItem` of the customer's notification request (the same outbox item order-events commits in
its transaction, so both sides do the same work).

It is used by two benchmarks:
- `sqs_vs_powertools.py` loads it (env set) and runs it against the inbox handler;
- `cold_start.py` imports it in fresh interpreters as the "Powertools reference".

Environment (read at import, like the example functions): `IDEMPOTENCY_TABLE`, `DOMAIN_TABLE`;
boto3 honours `AWS_ENDPOINT_URL_DYNAMODB`.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.parser import parse
from botocore.config import Config
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

DOMAIN_TABLE = os.environ["DOMAIN_TABLE"]
IDEMPOTENCY_TABLE = os.environ["IDEMPOTENCY_TABLE"]

#: Same client settings as the inbox consumer uses, so neither side gets a different SDK retry policy.
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=3,
    read_timeout=10,
    tcp_keepalive=True,
)

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "order-events-powertools"))
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "OrderEvents"))
processor = BatchProcessor(event_type=EventType.SQS)

dynamodb = boto3.client("dynamodb", config=CLIENT_CONFIG)
persistence_layer = DynamoDBPersistenceLayer(
    table_name=IDEMPOTENCY_TABLE,
    boto3_client=boto3.client("dynamodb", config=CLIENT_CONFIG),
)
idempotency_config = IdempotencyConfig(event_key_jmespath="event_id")


class OrderLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sku: str = Field(min_length=1)
    qty: int = Field(gt=0)


class OrderPlaced(BaseModel):
    event_id: str = Field(min_length=1)
    order_id: str = Field(min_length=1)
    customer_id: str = Field(min_length=1)
    lines: list[OrderLine] = Field(min_length=1)
    total_cents: int = Field(ge=0)


class InsufficientStock(Exception):
    """A stock condition failed (a real consumer would write a rejection here)."""


@idempotent_function(  # type: ignore[untyped-decorator]
    data_keyword_argument="order",
    config=idempotency_config,
    persistence_store=persistence_layer,
)
def reserve_stock(order: dict[str, Any]) -> dict[str, Any]:
    quantities: Counter[str] = Counter()
    for line in order["lines"]:
        quantities[line["sku"]] += int(line["qty"])
    for sku, qty in quantities.items():
        dynamodb.update_item(
            TableName=DOMAIN_TABLE,
            Key={"pk": {"S": f"SKU#{sku}"}, "sk": {"S": "STOCK"}},
            UpdateExpression="SET available = available - :qty ADD reserved :qty",
            ConditionExpression="available >= :qty",
            ExpressionAttributeValues={":qty": {"N": str(qty)}},
        )
    dynamodb.put_item(
        TableName=DOMAIN_TABLE,
        Item={
            "pk": {"S": f"ORDER#{order['order_id']}"},
            "sk": {"S": "SHIPMENT"},
            "status": {"S": "PENDING"},
            "customer_id": {"S": order["customer_id"]},
            "lines": {
                "L": [
                    {"M": {"sku": {"S": line["sku"]}, "qty": {"N": str(line["qty"])}}}
                    for line in order["lines"]
                ]
            },
            "event_id": {"S": order["event_id"]},
        },
        ConditionExpression="attribute_not_exists(pk)",
    )
    notification = f"order_shipped:{order['order_id']}"
    body = {
        "event_id": notification,
        "customer_id": order["customer_id"],
        "order_id": order["order_id"],
        "template": "order_shipped",
    }
    created = int(time.time())
    dynamodb.put_item(
        TableName=DOMAIN_TABLE,
        Item={
            "pk": {"S": f"OUTBOX#{notification}"},
            "sk": {"S": f"OUTBOX#{notification}"},
            "outbox_message_id": {"S": notification},
            "outbox_destination": {"S": "notifications"},
            "outbox_body": {"S": json.dumps(body, separators=(",", ":"))},
            "outbox_created_at": {"N": str(created)},
            "expires_at": {"N": str(created + 7 * 24 * 3600)},
        },
        ConditionExpression="attribute_not_exists(pk)",
    )
    return {"outcome": "reserved", "order_id": order["order_id"]}


def record_handler(record: SQSRecord) -> dict[str, Any]:
    # Powertools parses the JSON text itself (its stub only admits an already decoded event).
    order = parse(event=record.body, model=OrderPlaced)  # type: ignore[call-overload]
    return reserve_stock(order=order.model_dump())  # type: ignore[no-any-return]


@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    idempotency_config.register_lambda_context(context)
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    metrics.add_metric("OrdersProcessed", MetricUnit.Count, len(event.get("Records", [])))
    return response
