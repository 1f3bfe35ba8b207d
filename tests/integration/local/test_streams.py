"""The local stack's DynamoDB Streams emulation on DynamoDB Local: a table's stream drives its
function with Lambda's DynamoDB event; filters, partial batch responses, bisection on error,
bounded retries and the on-failure destination behave as the event source mapping's."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devkit.aws_documents import aws_document, shape_problems
from lambda_inbox_tools.local.stack import LocalStack, running_stack
from lambda_inbox_tools.services.items import scan_plain

TEMPLATE = Path(__file__).resolve().parent / "stream_app" / "template.yaml"


def wait_for(condition: Callable[[], bool], poller: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out: {poller.stats}"
        time.sleep(0.1)


def put(stack: LocalStack, pk: str, **attributes: str) -> None:
    item = {"pk": {"S": pk}, **{k: {"S": v} for k, v in attributes.items()}}
    stack.dynamodb.put_item(TableName=stack.stack.table("SourceTable").name, Item=item)


def copies(stack: LocalStack) -> dict[str, int]:
    seen = scan_plain(stack.dynamodb, stack.stack.table("SeenTable").name)
    return {item["pk"]: int(item["copies"]) for item in seen}


def test_stream_records_drive_the_function(
    dynamodb_local_endpoint: str, moto_server_endpoint: str
) -> None:
    with running_stack(
        TEMPLATE,
        dynamodb_endpoint=dynamodb_local_endpoint,
        sqs_endpoint=moto_server_endpoint,
        stack_name=f"streams-{time.monotonic_ns() % 10**8}",
        say=lambda _: None,
    ) as stack:
        assert stack.skipped == []
        (poller,) = stack.stream_pollers
        stack.start()
        for n in range(6):
            put(stack, f"COPY#{n}")
        put(stack, "OTHER#1")  # filtered out: no COPY# prefix
        put(stack, "COPY#0", note="an update")  # filtered out: MODIFY
        put(stack, "COPY#retry", fail="once")  # reported failed once, then copied
        put(stack, "COPY#poison", fail="always")  # the invocation fails: bisected, given up
        put(stack, "COPY#after")

        expected = {f"COPY#{n}": 1 for n in range(6)} | {"COPY#retry": 1, "COPY#after": 1}
        wait_for(lambda: copies(stack) == expected and poller.stats.given_up_batches == 1, poller)
        stack.stop()

        given_up = stack.sqs.receive_message(
            QueueUrl=stack.stack.queue("GivenUpQueue").url, WaitTimeSeconds=1
        )["Messages"]
        record = json.loads(given_up[0]["Body"])
        assert shape_problems(aws_document("dynamodb-streams-on-failure.json"), record) == []
        info: dict[str, Any] = record["DDBStreamBatchInfo"]
        assert info["batchSize"] == 1  # bisected down to the one record that fails
        assert info["streamArn"].startswith(
            f"arn:aws:dynamodb:us-east-1:123456789012:table/{stack.stack.table('SourceTable').name}/stream/"
        )
        assert poller.stats.filtered_out == 2
        assert poller.stats.failed_invocations >= 3  # retried twice after bisecting down
        assert copies(stack) == expected
