"""How far a consumer got into a large aggregated Kinesis record, kept across invocations.

A KPL aggregate of 150,000 user records takes several invocations. Lambda retries it from its
own sequence number, so each retry delivers every user record again; reading all the settled
ones again (to find them duplicates) would take longer each time, until a retry could no longer
reach a new one. So after each chunk of such an aggregate settles whole (committed, duplicate
or dead-lettered: nothing to redeliver), the index of its next user record is written to the
inbox table, and a later invocation starts there. Skipping a settled user record is what a
duplicate would have been: acknowledged, nothing applied again.

The item: `pk = "#aggregate#{consumer}#{eventID}"` (no inbox record's key starts with `#`: a
consumer name is never empty), `next_index`, and `expires_at` after the consumer's retention,
like the records it stands for. Only an aggregate of more user records than one chunk has one;
reading it and writing it are bounded by the deadline and best effort: without it, a retry
reads the settled records again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lambda_inbox._errors import short_error
from lambda_inbox.store._record import PARTITION_KEY, TTL_ATTRIBUTE

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from mypy_boto3_dynamodb import DynamoDBClient

    from lambda_inbox._config import InboxConfig
    from lambda_inbox._internal.deadline import Deadline


class AggregateProgressStore:
    """The progress items of one consumer, read and written under one invocation's deadline
    (`sources.kinesis.AggregateProgress`)."""

    def __init__(
        self,
        client: DynamoDBClient,
        config: InboxConfig,
        deadline: Deadline,
        logger: Logger,
        *,
        resumes_above: int,
    ) -> None:
        self._client = client
        self._table = config.inbox_table
        self._consumer = config.consumer
        self._retention = config.retention.completed.total_seconds()
        self._clock = config.clock
        self._deadline = deadline
        self._log = logger
        self.resumes_above = resumes_above

    def _key(self, parent_id: str) -> dict[str, dict[str, str]]:
        return {PARTITION_KEY: {"S": f"#aggregate#{self._consumer}#{parent_id}"}}

    def start(self, parent_id: str) -> int:
        """The index of the aggregate's first user record not known to be settled (0 when no
        progress is kept, or it cannot be read in time)."""
        try:
            item = self._deadline.run(
                self._client.get_item, TableName=self._table, Key=self._key(parent_id)
            ).get("Item")
        except Exception as error:  # the records are read again instead: slower, never wrong
            self._log.warning(
                "could not read an aggregate's progress", extra={"error": short_error(error)}
            )
            return 0
        if item is None or int(item.get(TTL_ATTRIBUTE, {}).get("N", "0")) < int(self._clock()):
            return 0
        return int(item["next_index"]["N"])

    def keep(self, parent_id: str, next_index: int) -> None:
        """Every user record of the aggregate before `next_index` has settled."""
        now = int(self._clock())
        try:
            self._deadline.run(
                self._client.put_item,
                TableName=self._table,
                Item={
                    **self._key(parent_id),
                    "next_index": {"N": str(next_index)},
                    TTL_ATTRIBUTE: {"N": str(int(now + self._retention))},
                },
                # Never back: a slower, older write must not undo a newer one.
                ConditionExpression="attribute_not_exists(next_index) OR next_index < :next",
                ExpressionAttributeValues={":next": {"N": str(next_index)}},
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            pass
        except Exception as error:  # best effort: a retry reads the settled records again
            self._log.warning(
                "could not keep an aggregate's progress", extra={"error": short_error(error)}
            )
