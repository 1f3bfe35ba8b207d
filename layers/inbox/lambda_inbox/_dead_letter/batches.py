"""Batches within a service's limits, and SQS's `SendMessageBatch` with what one entry spoils.

`chunks` cuts items into batches of a count and a size (the outbox's destinations, the
dead-letter queue, the command line's redrive); `sqs_batches` does it for `SendMessageBatch`
entries (ten, and 256 KiB together); `send_sqs_batch` sends one, each entry alone when SQS
refuses the whole call for one entry's sake. Loaded with the first batch sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from botocore.exceptions import ClientError

from lambda_inbox._internal import MAX_BATCH_ENTRIES, SQS_MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

T = TypeVar("T")
#: What one `SendMessageBatch` may carry: entries, and bytes of them all together.
SQS_BATCH_ENTRIES = MAX_BATCH_ENTRIES
SQS_BATCH_BYTES = SQS_MAX_MESSAGE_BYTES
#: Errors of a whole `SendMessageBatch` that one entry can cause (each entry is then sent alone).
ENTRY_ERRORS = frozenset(
    {
        "InvalidParameterValue",
        "InvalidMessageContents",
        "BatchRequestTooLong",
        "AWS.SimpleQueueService.BatchRequestTooLong",
        "MessageTooLong",
        "InvalidParameterCombination",
    }
)


def chunks(
    items: Sequence[T], size: Callable[[T], int], max_entries: int, max_bytes: int
) -> Iterator[list[T]]:
    """`items` in order, in batches of at most `max_entries` and `max_bytes` (an item larger
    than `max_bytes` alone is a batch of its own: the sender refuses it, not its neighbours)."""
    batch: list[T] = []
    used = 0
    for item in items:
        bytes_ = size(item)
        if batch and (len(batch) == max_entries or used + bytes_ > max_bytes):
            yield batch
            batch, used = [], 0
        batch.append(item)
        used += bytes_
    if batch:
        yield batch


def sqs_entry_size(entry: Mapping[str, Any]) -> int:
    """SQS's size of a send entry: its body, and each attribute's name, type and value."""
    size = len(str(entry["MessageBody"]).encode("utf-8", errors="surrogatepass"))
    for name, value in entry.get("MessageAttributes", {}).items():
        size += len(name.encode("utf-8")) + len(str(value["DataType"]).encode("utf-8"))
        if "BinaryValue" in value:
            size += len(value["BinaryValue"])
        else:
            size += len(str(value["StringValue"]).encode("utf-8", errors="surrogatepass"))
    return size


def sqs_batches(
    entries: Sequence[dict[str, Any]], max_bytes: int = SQS_BATCH_BYTES
) -> Iterator[list[dict[str, Any]]]:
    """`SendMessageBatch` entries in batches SQS takes (`chunks`)."""
    return chunks(entries, sqs_entry_size, SQS_BATCH_ENTRIES, max_bytes)


def send_sqs_batch(
    sqs: SQSClient, queue_url: str, batch: list[dict[str, Any]]
) -> tuple[list[str], list[tuple[str, str]]]:
    """Send a batch: ids of the entries sent, (id, reason) of those refused.

    When SQS refuses the whole batch for one entry's sake (too large, invalid), each entry is
    sent alone (`send_each`) so that one bad message does not hold back the others. Other
    errors of the call (throttling, an outage, a missing queue) are raised.
    """
    try:
        response = sqs.send_message_batch(
            QueueUrl=queue_url,
            Entries=cast("list[SendMessageBatchRequestEntryTypeDef]", batch),
        )
    except ClientError as error:
        if _code(error) not in ENTRY_ERRORS:
            raise
        return send_each(sqs, queue_url, batch)
    sent = [done["Id"] for done in response.get("Successful", [])]
    refused = [
        (failed["Id"], f"{failed.get('Code', '?')}: {failed.get('Message', '')}")
        for failed in response.get("Failed", [])
    ]
    return sent, refused


def send_each(
    sqs: SQSClient, queue_url: str, batch: list[dict[str, Any]]
) -> tuple[list[str], list[tuple[str, str]]]:
    """The entries of `batch` sent one `SendMessage` each: ids sent, (id, reason) refused for
    the entry's own sake; other errors are raised."""
    sent: list[str] = []
    refused: list[tuple[str, str]] = []
    for entry in batch:
        request = {key: value for key, value in entry.items() if key != "Id"}
        try:
            sqs.send_message(QueueUrl=queue_url, **request)
        except ClientError as error:
            if _code(error) not in ENTRY_ERRORS:
                raise
            message = str(error.response.get("Error", {}).get("Message", "")) or str(error)
            refused.append((entry["Id"], f"{_code(error)}: {message}"))
        else:
            sent.append(entry["Id"])
    return sent, refused


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
