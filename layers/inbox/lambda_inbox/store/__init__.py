"""The inbox table's one gateway, and the data model of everything lambda-inbox stores.

No other code names a stored attribute, builds a condition or queries the index: stages, tools
and the command line call this package with values (`InboxRecord`, `Status`, keys, times).

**The table** (template.yaml's `InboxTable`; `create_inbox_table` for local stacks):
partition key `pk` (S) only, on demand; TTL on `expires_at`; the sparse global secondary index
`open-records` (`gsi_open_pk` HASH, `gsi_open_sk` RANGE, projection ALL), which holds open
records only. Reads treat `expires_at < now` as absent: TTL deletion lags by days.

**The inbox record** (`InboxRecord`; key `pk = "{consumer}#{message_key}"`):

- `pk` (S): the key.
- `consumer` (S), `message_key` (S), `status` (S: COMPLETED, IN_PROGRESS or FAILED).
- `fingerprint` (S): SHA-256 of the canonical payload; `source` (S): the event source;
  `delivery_id` (S): the source's id of the delivery.
- `expires_at` (N, epoch seconds): COMPLETED, commit time + `Retention.completed` (7 days);
  FAILED, failure time + `Retention.failed` (14 days); absent on a lease.
- `completed_at` (S, ISO time, `utc_iso`): when it committed; `result` (S): the handler's
  result as sorted JSON.
- `owner` (S, uuid hex), `attempts` (N), `lease_expires_at` (N, epoch seconds to the ms): the
  lease of leased mode (`_leases`), held until and at that instant.
- `failed_at` (S, ISO time), `error_code` (S), `last_error` (S, at most 1,024 characters),
  `dead_lettered_at` (S, ISO time; absent until the message is in the DLQ).
- `payload_snapshot` (B, or NULL when empty: the first `Retention.snapshot_bytes` of the body)
  and `payload_truncated` (BOOL), on leases and FAILED records.
- `reaper_claim` (S, a run's token) and `reaper_claim_expires` (N, epoch seconds): a reaper
  run's claim on a FAILED record (`_reaper_claims`), removed when it settles.
- `gsi_open_pk` (S, `"{status}#{nn}"`, `nn = crc32(pk) % 16`) and `gsi_open_sk` (S, ISO time:
  failure time, or lease expiry): the open-records index's keys, on open records only.

Its writes, each conditional: the completion put, in the batch's transaction (the record is
absent, expired or FAILED; in leased mode, still this owner's lease; `ALL_OLD` on failure);
a FAILED record (`_failed`: never over a live COMPLETED one); the lease claim (one condition per
state read) and a failed attempt (still this owner's); the reaper's reap of an expired lease
(unchanged since read), its claim (FAILED, not dead-lettered, no live claim) and its settle
(its own claim).

**The open-records index** (`_open_index`): every status and every one of the 16 shards is
queried, `since`/`until` bounding the sort key, pages merged by `gsi_open_sk`; never a scan.

**The aggregate's progress** (`_progress`; key `pk = "#aggregate#{consumer}#{eventID}"`):

- `next_index` (N): the first user record of a KPL aggregate not known to be settled, never
  lowered; `expires_at` after `Retention.completed`.

**The outbox item** (`_outbox_item`; any table with a stream, not the inbox table): its first
key attribute (and its second, when the table has one) is `OUTBOX#{message_id}`, written only
if new; the TTL attribute (`expires_at` unless named) is its creation + 7 days.

- `outbox_message_id` (S), `outbox_destination` (S), `outbox_body` (S).
- `outbox_attributes` (M, at most 9 strings), `outbox_group_id` (S).
- `outbox_created_at` (N, epoch seconds).
- `outbox_event_source` (S), `outbox_detail_type` (S): an EventBridge event's.

**Sizes** (`_attribute_values`): each DynamoDB type's size once (a number's as an upper bound
of AWS's rule), and an item's (`item_size`), for the 400 KB item and 4 MB transaction limits.
"""

from typing import TYPE_CHECKING, Any

from lambda_inbox.store._attribute_values import item_size
from lambda_inbox.store._inbox import InboxStore, get_record
from lambda_inbox.store._record import (
    OPEN_INDEX_SHARDS,
    OPEN_RECORDS_INDEX,
    PARTITION_KEY,
    TTL_ATTRIBUTE,
    InboxRecord,
    Status,
    epoch_of,
    open_index_pk,
    open_index_shard,
    record_pk,
    utc_iso,
)

__all__ = [
    "OPEN_INDEX_SHARDS",
    "OPEN_RECORDS_INDEX",
    "PARTITION_KEY",
    "TTL_ATTRIBUTE",
    "InboxRecord",
    "InboxStore",
    "OutboxMessage",
    "Status",
    "attention_records",
    "create_inbox_table",
    "epoch_of",
    "get_record",
    "item_size",
    "open_index_pk",
    "open_index_shard",
    "open_records",
    "outbox_message_of",
    "outbox_messages_written",
    "record_pk",
    "utc_iso",
]

if TYPE_CHECKING:
    from lambda_inbox.store._open_index import (
        attention_records,
        create_inbox_table,
        open_records,
    )
    from lambda_inbox.store._outbox_item import (
        OutboxMessage,
        outbox_message_of,
        outbox_messages_written,
    )


def __getattr__(name: str) -> Any:
    if name in ("OutboxMessage", "outbox_message_of", "outbox_messages_written"):
        from lambda_inbox.store import _outbox_item

        return getattr(_outbox_item, name)
    if name in ("attention_records", "create_inbox_table", "open_records"):
        from lambda_inbox.store import _open_index

        return getattr(_open_index, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
