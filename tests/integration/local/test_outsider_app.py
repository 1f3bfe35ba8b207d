"""The local stack on a template written as an outsider writes one (outsider_app/), against
AWS's documented behaviours: two tables with streams both deliver (DynamoDB Local numbers stream
records across tables), each function sees its own environment at every invocation, with
`AWS_LAMBDA_FUNCTION_NAME`, an unnamed FIFO queue is named as CloudFormation names it, and a
plain string answered to an SQS batch is no success."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lambda_inbox_tools.local.stack import LocalStack, running_stack
from lambda_inbox_tools.services.items import scan_plain
from lambda_inbox_tools.services.queues import queue_depth

TEMPLATE = Path(__file__).resolve().parent / "outsider_app" / "template.yaml"


@pytest.fixture
def stack(dynamodb_local_endpoint: str, moto_server_endpoint: str) -> Iterator[LocalStack]:
    with running_stack(
        TEMPLATE,
        dynamodb_endpoint=dynamodb_local_endpoint,
        sqs_endpoint=moto_server_endpoint,
        stack_name=f"out-{time.monotonic_ns() % 10**8}",
        say=lambda _: None,
    ) as local:
        assert local.skipped == []
        local.start()
        yield local


def wait_for(condition: Callable[[], bool], stack: LocalStack, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        errors = [e for r in stack.runners() for e in r.stats.errors]
        assert time.monotonic() < deadline, f"timed out; event source errors: {errors}"
        time.sleep(0.2)


def seen(stack: LocalStack) -> dict[str, dict[str, Any]]:
    return {i["pk"]: i for i in scan_plain(stack.dynamodb, stack.stack.table("SeenTable").name)}


def test_two_tables_with_streams_both_deliver_each_function_with_its_own_environment(
    stack: LocalStack,
) -> None:
    for n in range(3):
        for logical_id in ("FirstSource", "SecondSource"):
            stack.dynamodb.put_item(
                TableName=stack.stack.table(logical_id).name,
                Item={"pk": {"S": f"{logical_id}-{n}"}},
            )
    wait_for(lambda: len(seen(stack)) == 6, stack)
    items = seen(stack)
    for logical_id, greeting in (("FirstSource", "first"), ("SecondSource", "second")):
        function = stack.stack.function("CopyFirst" if greeting == "first" else "CopySecond")
        for n in range(3):
            item = items[f"{logical_id}-{n}"]
            assert (item["greeting"], item["function"]) == (greeting, function.name)
    assert [e for p in stack.stream_pollers for e in p.stats.errors] == []
    assert "GREETING" not in os.environ  # the functions' variables never leak into the process


def test_an_unnamed_fifo_queue_is_named_as_cloudformation_names_it(stack: LocalStack) -> None:
    queue = stack.stack.queue("OrdersFifo")
    assert queue.name.endswith(".fifo") and queue.arn.endswith(".fifo") and queue.fifo
    assert stack.stack.queue("OrdersFifoDlq").name.endswith(".fifo")
    stack.sqs.send_message(QueueUrl=queue.url, MessageBody="order-1", MessageGroupId="c-1")
    wait_for(lambda: "order-1" in seen(stack), stack)
    assert seen(stack)["order-1"]["greeting"] == "fifo"


def test_a_plain_string_answer_to_an_sqs_batch_is_no_success(stack: LocalStack) -> None:
    plain, dlq = stack.stack.queue("PlainQueue"), stack.stack.queue("PlainDlq")
    stack.sqs.send_message(QueueUrl=plain.url, MessageBody="m")
    wait_for(lambda: queue_depth(stack.sqs, dlq.url) == 1, stack)
    (poller,) = [p for p in stack.sqs_pollers if p.queue.logical_id == "PlainQueue"]
    assert poller.stats.deleted == 0 and poller.stats.invocations == 2  # maxReceiveCount
