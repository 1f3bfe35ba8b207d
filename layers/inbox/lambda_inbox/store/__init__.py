"""The inbox table's one gateway: every attribute name, key format and conditional write of the
inbox record lives in this package.

- `record`: the record, its key and the open-records index layout (read both ways).
- `inbox`: the consumer's reads and writes (duplicate filter, the transaction's inbox `Put`, the
  FAILED record of a dead-lettered message).
- `open_index`: reads of the sparse open-records index, every shard (the reaper's and the
  command line's; loaded on first use, a consumer never reads the index).
- `leases`: leased mode's claim and failed-attempt writes (loaded by leased consumers only).
- `reaping`: the reaper's claims and marks (loaded by the reaper only).
"""

from typing import TYPE_CHECKING, Any

from lambda_inbox.store.attribute_values import item_size
from lambda_inbox.store.inbox import BATCH_GET_LIMIT, InboxStore, get_record
from lambda_inbox.store.record import (
    OPEN_INDEX_PK,
    OPEN_INDEX_SHARDS,
    OPEN_INDEX_SK,
    OPEN_RECORDS_INDEX,
    PARTITION_KEY,
    TTL_ATTRIBUTE,
    InboxRecord,
    Status,
    claims_lease,
    epoch_of,
    open_index_pk,
    open_index_shard,
    record_pk,
    utc_iso,
)

__all__ = [
    "BATCH_GET_LIMIT",
    "OPEN_INDEX_PK",
    "OPEN_INDEX_SHARDS",
    "OPEN_INDEX_SK",
    "OPEN_RECORDS_INDEX",
    "PARTITION_KEY",
    "TTL_ATTRIBUTE",
    "InboxRecord",
    "InboxStore",
    "Status",
    "attention_records",
    "claims_lease",
    "epoch_of",
    "get_record",
    "item_size",
    "open_index_pk",
    "open_index_shard",
    "open_records",
    "open_records_of_shard",
    "record_pk",
    "utc_iso",
]

if TYPE_CHECKING:
    from lambda_inbox.store.open_index import (
        attention_records,
        open_records,
        open_records_of_shard,
    )


def __getattr__(name: str) -> Any:
    if name in ("attention_records", "open_records", "open_records_of_shard"):
        from lambda_inbox.store import open_index

        return getattr(open_index, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
