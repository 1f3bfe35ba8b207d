"""Handlers that read their environment when called, as many do: `copy` and `remember` write
what they saw (the variable GREETING, the function's name) to SEEN_TABLE; `plain_string`
answers an SQS batch with "ok", which is no batch response."""

import os
from typing import Any

import boto3

dynamodb = boto3.client("dynamodb")


def _seen(key: str) -> None:
    dynamodb.put_item(
        TableName=os.environ["SEEN_TABLE"],
        Item={
            "pk": {"S": key},
            "greeting": {"S": os.environ["GREETING"]},
            "function": {"S": os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "-")},
        },
    )


def copy(event: dict[str, Any], context: object) -> None:
    for record in event["Records"]:
        _seen(record["dynamodb"]["NewImage"]["pk"]["S"])


def remember(event: dict[str, Any], context: object) -> dict[str, Any]:
    for record in event["Records"]:
        _seen(record["body"])
    return {"batchItemFailures": []}


def plain_string(event: dict[str, Any], context: object) -> str:
    return "ok"
