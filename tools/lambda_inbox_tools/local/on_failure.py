"""The on-failure records the local stack's stream and Kafka event sources write, in the shapes
of AWS's documented samples (tests/fixtures/aws/: `kafka-on-failure-sqs-*.json`,
`dynamodb-streams-on-failure.json`), and where they go.

What every record shares: `requestContext` (a request id, the function's ARN, the condition,
how many times the batch was invoked), `responseContext` (the last invocation's status; null
when the batch was never invoked because it was too large), `version` "1.0" and `timestamp`.
A destination that is one of the template's queues gets the record as a message; any other
(an S3 bucket, an SNS topic) is listed once as not emulated when the stack starts.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from .template import ACCOUNT, REGION, FunctionSpec

RETRY_ATTEMPTS_EXHAUSTED = "RetryAttemptsExhausted"
MAXIMUM_PAYLOAD_SIZE_EXCEEDED = "MaximumPayloadSizeExceeded"
#: Records a stream's event source discarded for `MaximumRecordAgeInSeconds`. AWS's samples
#: show the other conditions only; the readers of on-failure records take any condition.
RECORD_AGE_EXCEEDED = "RecordAgeExceeded"
#: Lambda's limit on a synchronous invocation's payload (6 MB).
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024


def iso_millis(epoch_seconds: float) -> str:
    """`2019-11-14T00:38:06.021Z`, as the records' `timestamp` and Kafka's record times."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def iso_seconds(epoch_seconds: float) -> str:
    """`2019-11-14T00:13:19Z`, as a stream record's arrival times."""
    return datetime.fromtimestamp(epoch_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def failure_record(
    function: FunctionSpec, *, condition: str, invocations: int, invoked: bool = True
) -> dict[str, Any]:
    """The parts every on-failure record shares; the caller adds its `...BatchInfo`."""
    return {
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function.name}",
            "condition": condition,
            "approximateInvokeCount": invocations,
        },
        "responseContext": {
            "statusCode": 200,
            "executedVersion": "$LATEST",
            "functionError": "Unhandled",
        }
        if invoked
        else None,
        "version": "1.0",
        "timestamp": iso_millis(time.time()),
    }


class Destination:
    """Where a poller's on-failure records go: an SQS queue (`sqs`, `url`), or nowhere."""

    def __init__(self, sqs: Any = None, url: str | None = None) -> None:
        self.sqs, self.url = sqs, url
        self.sent: int = 0

    def send(self, record: dict[str, Any]) -> None:
        if self.sqs is None or self.url is None:
            return
        self.sqs.send_message(QueueUrl=self.url, MessageBody=json.dumps(record))
        self.sent += 1
