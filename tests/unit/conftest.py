"""Moto fixtures for the unit tests: inbox and domain tables, standard and FIFO dead-letter queues.

Everything runs inside `moto.mock_aws()`: no process, no network. Example functions are loaded
with their environment set inside the mock so the boto3 clients they build at import are mocked.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import boto3
import pytest
from moto import mock_aws

from tests.support.handlers import load_function
from tests.support.tables import create_domain_table, create_inbox_table
from tests.unit.helpers import SKUS, seed_stock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

REGION = "us-east-1"


@dataclass(frozen=True)
class MotoAws:
    """Mocked AWS resources of one test."""

    dynamodb: DynamoDBClient
    sqs: SQSClient
    inbox: str
    domain: str
    dlq_url: str
    fifo_dlq_url: str


@pytest.fixture
def aws() -> Iterator[MotoAws]:
    """Inbox + domain tables and an SQS dead-letter queue (standard and FIFO) under moto."""
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        create_inbox_table(dynamodb, "inbox")
        create_domain_table(dynamodb, "domain")
        dlq_url = sqs.create_queue(QueueName="inbox-dlq")["QueueUrl"]
        fifo_dlq_url = sqs.create_queue(
            QueueName="inbox-dlq.fifo", Attributes={"FifoQueue": "true"}
        )["QueueUrl"]
        yield MotoAws(dynamodb, sqs, "inbox", "domain", dlq_url, fifo_dlq_url)


@pytest.fixture
def order_events(aws: MotoAws, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """functions/order_events loaded against the moto tables and DLQ, stock seeded at 100."""
    monkeypatch.setenv("INBOX_TABLE", aws.inbox)
    monkeypatch.setenv("DOMAIN_TABLE", aws.domain)
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", aws.dlq_url)
    module = load_function("order_events")
    seed_stock(aws.dynamodb, aws.domain, {sku: 100 for sku in SKUS})
    return module
