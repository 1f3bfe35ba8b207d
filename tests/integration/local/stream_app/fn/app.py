"""Copies each new COPY# item's key to SEEN_TABLE, in order. An item with `fail` = "once" is
reported failed the first time it is seen (with every record after it, as stream consumers
do); an item with `fail` = "always" makes the invocation raise before anything is copied."""

import os
from typing import Any

import boto3

SEEN_TABLE = os.environ["SEEN_TABLE"]
dynamodb = boto3.client("dynamodb")
reported: set[str] = set()


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    images = [record["dynamodb"]["NewImage"] for record in event["Records"]]
    for image in images:
        if image.get("fail", {}).get("S") == "always":
            raise RuntimeError(f"cannot copy {image['pk']['S']}")
    for index, image in enumerate(images):
        key = image["pk"]["S"]
        if image.get("fail", {}).get("S") == "once" and key not in reported:
            reported.add(key)
            return {
                "batchItemFailures": [
                    {"itemIdentifier": record["dynamodb"]["SequenceNumber"]}
                    for record in event["Records"][index:]
                ]
            }
        dynamodb.update_item(
            TableName=SEEN_TABLE,
            Key={"pk": {"S": key}},
            UpdateExpression="ADD copies :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
    return {"batchItemFailures": []}
