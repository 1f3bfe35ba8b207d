"""A consumer makes its AWS clients on first use: a handler module imported before a test starts
moto (`mock_aws()`) still talks to moto, not to AWS.

The trap is real only in a fresh interpreter, where the handler is imported before moto is, so
the main test runs one: no AWS credentials, no endpoint, moto imported after the handler.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import boto3
from moto import mock_aws

from devkit.paths import LAYER_DIR
from lambda_inbox import InboxConfig, InboxConsumer, OutboxRelay, UnitOfWork
from lambda_inbox._internal.aws_clients import on_first_use

HANDLER = """
from pydantic import BaseModel

from lambda_inbox import InboxConsumer, UnitOfWork


class OrderPlaced(BaseModel):
    order_id: str


def record(order: OrderPlaced, uow: UnitOfWork) -> None:
    uow.put("orders", {"pk": order.order_id}, condition="attribute_not_exists(pk)")


consumer = InboxConsumer("orders", model=OrderPlaced, decide=record, key="order_id")


def handler(event, context):
    return consumer.handle(event, context)
"""

SCRIPT = """
import json
import sys

import app  # the consumer is built here, before moto is imported

assert "moto" not in sys.modules

import boto3
from moto import mock_aws

with mock_aws():
    dynamodb = boto3.client("dynamodb")
    dynamodb.create_table(
        TableName="inbox",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    dynamodb.create_table(
        TableName="orders",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    record = {
        "messageId": "m-1",
        "receiptHandle": "r-1",
        "body": json.dumps({"order_id": "o-1"}),
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000"},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:orders",
        "awsRegion": "us-east-1",
    }
    response = app.handler({"Records": [record]}, None)
    orders = dynamodb.scan(TableName="orders")["Count"]
    inbox = dynamodb.scan(TableName="inbox")["Items"]
    print(json.dumps({"response": response, "orders": orders,
                      "statuses": [item["status"]["S"] for item in inbox]}))
"""


def test_a_handler_imported_before_mock_aws_commits_on_moto(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(HANDLER)
    layer = LAYER_DIR
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(layer)]),
        INBOX_TABLE="inbox",
        AWS_DEFAULT_REGION="us-east-1",
        # No credentials and no instance metadata: a client made before moto cannot reach AWS.
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {
        "response": {"batchItemFailures": []},
        "orders": 1,
        "statuses": ["COMPLETED"],
    }


def _record(order: object, uow: UnitOfWork) -> None:
    raise AssertionError("not called")


def test_no_client_is_made_at_construction() -> None:
    config = InboxConfig(
        consumer="orders", inbox_table="inbox", dead_letter_queue_url="https://sqs/dlq"
    )
    consumer = InboxConsumer("orders", model=dict, decide=_record, config=config)
    relay = OutboxRelay()
    assert "not made yet" in repr(consumer.dynamodb)
    assert "not made yet" in repr(relay.sqs)
    with mock_aws():
        # First use under moto: the client is made now, and moto serves it.
        boto3.client("dynamodb", region_name="us-east-1").create_table(
            TableName="inbox",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        )
        assert consumer.dynamodb.list_tables()["TableNames"] == ["inbox"]
        assert "made" in repr(consumer.dynamodb) and "not made" not in repr(consumer.dynamodb)


def test_the_client_is_made_once_whatever_asks_first() -> None:
    made: list[object] = []
    ready = threading.Barrier(8)

    def make() -> SimpleNamespace:
        made.append(1)
        time.sleep(0.05)  # a slow make: without the lock, every waiting thread would make one
        return SimpleNamespace(call=lambda: "answered")

    client = on_first_use(make)
    assert not hasattr(client, "__deepcopy__")  # protocol lookups make nothing
    copy.copy(client)
    assert made == []

    def first_call() -> str:
        ready.wait()
        return str(client.call())

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: first_call(), range(8)))
    assert answers == ["answered"] * 8
    assert made == [1]
