"""Sending a batch of entries to the destination: what was sent and what was refused, each
entry sent alone when SQS refuses the whole batch for one entry's sake."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from ..aws import error_code, error_message

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

#: Errors of a whole SendMessageBatch that one entry can cause (each entry is then sent alone).
_ENTRY_ERRORS = frozenset(
    {
        "InvalidParameterValue",
        "InvalidMessageContents",
        "BatchRequestTooLong",
        "AWS.SimpleQueueService.BatchRequestTooLong",
        "MessageTooLong",
        "InvalidParameterCombination",
    }
)


def send_batch(
    sqs: SQSClient, queue_url: str, batch: list[dict[str, Any]]
) -> tuple[list[str], list[tuple[str, str]]]:
    """Send a batch: ids of the entries sent, (id, reason) of those refused.

    When SQS refuses the whole batch for one entry's sake (too large, invalid), each
    entry is sent alone so that one bad message does not hold back the others.
    """
    try:
        response = sqs.send_message_batch(
            QueueUrl=queue_url,
            Entries=cast("list[SendMessageBatchRequestEntryTypeDef]", batch),
        )
    except ClientError as error:
        if error_code(error) not in _ENTRY_ERRORS:
            raise
        return _send_each(sqs, queue_url, batch)
    sent = [done["Id"] for done in response.get("Successful", [])]
    refused = [
        (failed["Id"], f"{failed.get('Code', '?')}: {failed.get('Message', '')}")
        for failed in response.get("Failed", [])
    ]
    return sent, refused


def _send_each(
    sqs: SQSClient, queue_url: str, batch: list[dict[str, Any]]
) -> tuple[list[str], list[tuple[str, str]]]:
    sent: list[str] = []
    refused: list[tuple[str, str]] = []
    for entry in batch:
        request = {key: value for key, value in entry.items() if key != "Id"}
        try:
            sqs.send_message(QueueUrl=queue_url, **request)
        except ClientError as error:
            if error_code(error) not in _ENTRY_ERRORS:
                raise
            refused.append((entry["Id"], f"{error_code(error)}: {error_message(error)}"))
        else:
            sent.append(entry["Id"])
    return sent, refused
