"""The records a Kinesis event source gave up on, read again from the stream.

An on-failure record of a Kinesis event source mapping (`KinesisBatchInfo`) holds no records:
they are read again from the shard, from the first sequence number to the last, while the stream
still holds them (its retention, 24 hours by default), and turned into the records Lambda
delivers (`lambda_records.lambda_kinesis_record`). Records the stream no longer holds are
named as missing: the replay says so and keeps the failure record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from ..lambda_records import lambda_kinesis_record
from .failures import KinesisBatch

PAGE = 1000
#: Pages read without reaching the batch's last sequence number before giving up (a shard whose
#: records past the batch keep coming).
MAX_EMPTY_PAGES = 5


@dataclass
class KinesisRead:
    """The batch's records as Lambda delivers them, and why it could not be read whole."""

    records: list[dict[str, Any]] = field(default_factory=list)
    problem: str | None = None


class KinesisReader:
    """Reads Kinesis batches back (`kinesis`: a Kinesis client)."""

    def __init__(self, kinesis: Any) -> None:
        self.kinesis = kinesis

    def read(self, batch: KinesisBatch) -> KinesisRead:
        found = KinesisRead()
        end = int(batch.end)
        try:
            iterator = self.kinesis.get_shard_iterator(
                StreamName=batch.stream_name,
                ShardId=batch.shard_id,
                ShardIteratorType="AT_SEQUENCE_NUMBER",
                StartingSequenceNumber=batch.start,
            )["ShardIterator"]
            empty = 0
            while iterator and empty < MAX_EMPTY_PAGES:
                answer = self.kinesis.get_records(ShardIterator=iterator, Limit=PAGE)
                page = answer.get("Records", [])
                empty = 0 if page else empty + 1
                for raw in page:
                    if int(raw["SequenceNumber"]) > end:
                        return self._checked(batch, found)
                    found.records.append(
                        lambda_kinesis_record(raw, batch.shard_id, batch.stream_arn, "replay")
                    )
                if page and int(page[-1]["SequenceNumber"]) == end:
                    break
                iterator = answer.get("NextShardIterator")
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            found.problem = f"the stream does not hold them ({code})"
            return found
        return self._checked(batch, found)

    @staticmethod
    def _checked(batch: KinesisBatch, found: KinesisRead) -> KinesisRead:
        numbers = [record["kinesis"]["sequenceNumber"] for record in found.records]
        if not numbers or numbers[0] != batch.start or numbers[-1] != batch.end:
            first = numbers[0] if numbers else "none"
            last = numbers[-1] if numbers else "none"
            found.problem = (
                f"the stream holds {len(numbers)} of its records ({first}..{last}): past the "
                "stream's retention, or resharded"
            )
        return found
