"""The Kinesis Data Streams event source mapping, emulated on a stream of the moto server.

The rules are those of the DynamoDB Streams poller (`stream_poller`: batch size, starting
position, partial batch responses by sequence number, bisect on error, retries, the on-failure
destination), with Kinesis's records: the event in the shape of AWS's sample
(tests/fixtures/aws/kinesis-event.json: base64 `data`, `eventID` `shardId-...:<sequence
number>`), and a given-up batch described as `KinesisBatchInfo`
(tests/fixtures/aws/kinesis-on-failure.json: shard, sequence-number range, arrival times, the
stream; never the records). `FilterCriteria` are not emulated (every record is delivered).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..lambda_records import lambda_kinesis_record
from .invoker import Invoker
from .stream_poller import PAGE_SIZE, ShardPoller
from .template import ACCOUNT, REGION, FunctionSpec, KinesisEventSpec


def kinesis_stream_arn(name: str) -> str:
    """The ARN a function sees for the stream `name` (the template's region and account)."""
    return f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/{name}"


class KinesisPoller(ShardPoller):
    """Polls one Kinesis stream for one function event until `stop()`."""

    BATCH_INFO = "KinesisBatchInfo"
    #: Lambda polls each shard of a Kinesis stream once a second.
    IDLE_PAUSE_SECONDS = 1.0

    def __init__(
        self,
        kinesis: Any,
        function: FunctionSpec,
        event: KinesisEventSpec,
        invoker: Invoker,
        *,
        sqs: Any = None,
        on_failure_url: str | None = None,
        retry_pause: float = 0.2,
        scale: float = 1.0,
    ) -> None:
        self.kinesis = kinesis
        self.stream_name = event.stream_name
        super().__init__(
            function,
            event,
            invoker,
            event_source_arn=kinesis_stream_arn(event.stream_name),
            sqs=sqs,
            on_failure_url=on_failure_url,
            retry_pause=retry_pause,
            scale=scale,
        )

    @property
    def label(self) -> str:
        return f"Kinesis {self.stream_name} -> {self.function.logical_id}"

    def _shard_ids(self) -> list[str]:
        shards: list[str] = []
        request: dict[str, Any] = {"StreamName": self.stream_name}
        while True:
            answer = self.kinesis.list_shards(**request)
            shards += [str(shard["ShardId"]) for shard in answer.get("Shards", [])]
            if not answer.get("NextToken"):
                return shards
            request = {"NextToken": answer["NextToken"]}

    def _page(self, shard_id: str, after: str | None) -> list[dict[str, Any]]:
        position: dict[str, str] = (
            {"ShardIteratorType": "TRIM_HORIZON"}
            if after is None
            else {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "StartingSequenceNumber": after}
        )
        iterator = self.kinesis.get_shard_iterator(
            StreamName=self.stream_name, ShardId=shard_id, **position
        )["ShardIterator"]
        page: list[dict[str, Any]] = self.kinesis.get_records(
            ShardIterator=iterator, Limit=PAGE_SIZE
        ).get("Records", [])
        return page

    def _raw_sequence(self, raw: Mapping[str, Any]) -> str:
        return str(raw["SequenceNumber"])

    def _lambda_record(self, raw: Mapping[str, Any], shard_id: str) -> dict[str, Any]:
        return lambda_kinesis_record(raw, shard_id, self.event_source_arn, self.function.logical_id)

    def _arrival(self, record: Mapping[str, Any]) -> float:
        return float(record["kinesis"].get("approximateArrivalTimestamp") or 0)
