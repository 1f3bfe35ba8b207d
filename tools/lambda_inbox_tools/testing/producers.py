"""SQS bodies as the producers that feed queues write them: SNS notifications (raw message
delivery off), EventBridge events and S3 event notifications, each with the keys and value types
of AWS's documented sample (tests/fixtures/aws/, checked both ways). Wrap one in an SQS record
with `sqs_record(body)`; the consumer reads it with `InboxConsumer(..., envelope=...)`.

    sqs_record(sns_notification({"order_id": "o-1"}, message_id="n-1"))
    sqs_record(eventbridge_event({"order_id": "o-1"}, event_id="e-1"))
    sqs_record(s3_notification(("bucket", "orders/o-1.json", "0055AED6DCD90281E5")))

SNS redelivers a notification to SQS under a new SQS `messageId`: build the SQS record twice
from one notification (`sqs_record(body)` gives each a new `messageId`); `check_effectively_once`
plays it by itself (`check.sources.retries`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

REGION = "us-east-1"
ACCOUNT = "123456789012"
TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:orders"
TIME = "2026-01-01T00:00:00.000Z"


def sns_notification(
    message: Mapping[str, Any] | str,
    *,
    message_id: str | None = None,
    topic_arn: str = TOPIC_ARN,
    subject: str | None = None,
    attributes: Mapping[str, str] | None = None,
) -> str:
    """The body SNS puts in a subscribed queue: `message` (JSON-encoded unless text) in a
    notification; `attributes` become its String `MessageAttributes`."""
    notification: dict[str, Any] = {
        "Type": "Notification",
        "MessageId": message_id or str(uuid.uuid4()),
        "TopicArn": topic_arn,
    }
    if subject is not None:
        notification["Subject"] = subject
    notification |= {
        "Message": message if isinstance(message, str) else json.dumps(message),
        "Timestamp": TIME,
        "SignatureVersion": "1",
        "Signature": "EXAMPLE",
        "SigningCertURL": f"https://sns.{REGION}.amazonaws.com/SimpleNotificationService-0.pem",
        "UnsubscribeURL": (
            f"https://sns.{REGION}.amazonaws.com/?Action=Unsubscribe&SubscriptionArn="
            f"{topic_arn}:00000000-0000-0000-0000-000000000000"
        ),
    }
    if attributes:
        notification["MessageAttributes"] = {
            name: {"Type": "String", "Value": value} for name, value in attributes.items()
        }
    return json.dumps(notification)


def eventbridge_event(
    detail: Mapping[str, Any],
    *,
    event_id: str | None = None,
    source: str = "com.example.orders",
    detail_type: str = "OrderPlaced",
) -> str:
    """The body an EventBridge rule's SQS target receives: the event with `detail`."""
    return json.dumps(
        {
            "version": "0",
            "id": event_id or str(uuid.uuid4()),
            "detail-type": detail_type,
            "source": source,
            "account": ACCOUNT,
            "time": "2026-01-01T00:00:00Z",
            "region": REGION,
            "resources": [],
            "detail": dict(detail),
        }
    )


def s3_notification(*objects: tuple[str, str, str], event_name: str = "ObjectCreated:Put") -> str:
    """The body S3 sends to a queue: one record per `(bucket, key, sequencer)`, the key as S3
    sends it (URL-encoded: give it encoded)."""
    return json.dumps({"Records": [_s3_record(*item, event_name) for item in objects]})


def s3_test_event(bucket: str = "amzn-s3-demo-bucket") -> str:
    """The message S3 sends once when a queue is configured as a bucket's destination."""
    return json.dumps(
        {
            "Service": "Amazon S3",
            "Event": "s3:TestEvent",
            "Time": TIME,
            "Bucket": bucket,
            "RequestId": "5582815E1AEA5ADF",
            "HostId": "EXAMPLE",
        }
    )


def _s3_record(bucket: str, key: str, sequencer: str, event_name: str) -> dict[str, Any]:
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": REGION,
        "eventTime": TIME,
        "eventName": event_name,
        "userIdentity": {"principalId": "AIDAEXAMPLE"},
        "requestParameters": {"sourceIPAddress": "172.16.0.1"},
        "responseElements": {"x-amz-request-id": "C3D13FE58DE4C810", "x-amz-id-2": "EXAMPLE"},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "inbox",
            "bucket": {
                "name": bucket,
                "ownerIdentity": {"principalId": "A3NL1KOZZKExample"},
                "arn": f"arn:aws:s3:::{bucket}",
            },
            "object": {
                "key": key,
                "size": 1024,
                "eTag": "d41d8cd98f00b204e9800998ecf8427e",
                "versionId": "096fKKXTRTtl3on89fVO.nfljtsv6qko",
                "sequencer": sequencer,
            },
        },
    }
