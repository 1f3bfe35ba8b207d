"""The public contract is enforced, not only declared: each public package's `__all__` is
pinned here (a new public name is a deliberate act), every other module of the library is
private by its name, and the tools, the functions, the examples and the starter import public
names only. Each check is proven on the input it must refuse."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from devkit.doc_snippets import PUBLIC_SUBPACKAGES, private_imports, public_names
from devkit.paths import REPO_ROOT

LIBRARY = REPO_ROOT / "layers" / "inbox" / "lambda_inbox"
#: The public modules: the package, its documented subpackages' own modules.
PUBLIC_MODULES = {"__init__.py", "reaper/__init__.py", "store/__init__.py", "wire.py"}
PINNED = {
    "lambda_inbox": [
        "Clients",
        "ConditionFailures",
        "ConfigurationError",
        "CreatesItem",
        "Decide",
        "DecodingLimits",
        "Envelope",
        "ErrorCode",
        "FailedCondition",
        "GroupCommit",
        "InboundMessage",
        "InboxBatchProcessor",
        "InboxConfig",
        "InboxConsumer",
        "InboxError",
        "KeyStrategy",
        "LeaseContext",
        "LeasePolicy",
        "Leased",
        "MessageResult",
        "Observability",
        "OutboxMessage",
        "OutboxRelay",
        "Outcome",
        "PoisonMessage",
        "PowertoolsIdempotency",
        "Retention",
        "RetryPolicy",
        "SourceSettings",
        "UnitOfWork",
        "UnitOfWorkError",
        "UnsupportedEvent",
        "ValueFormats",
        "current_envelope",
        "generated_message",
    ],
    "lambda_inbox.reaper": [
        "ConsumerCounts",
        "LEASE_EXPIRED_REASON",
        "ReapSummary",
        "Reaper",
        "ReaperSettings",
        "emit_metrics",
        "handler",
        "message_of",
    ],
    "lambda_inbox.store": [
        "InboxRecord",
        "InboxStore",
        "OPEN_INDEX_SHARDS",
        "OPEN_RECORDS_INDEX",
        "OutboxMessage",
        "PARTITION_KEY",
        "Status",
        "TTL_ATTRIBUTE",
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
    ],
    "lambda_inbox.wire": [
        "Destination",
        "IDEMPOTENCY_KEY_ATTRIBUTE",
        "KPL_MAGIC",
        "MAX_BATCH_ENTRIES",
        "MESSAGE_KEY_ATTRIBUTE",
        "SQS_BATCH_BYTES",
        "SQS_BATCH_ENTRIES",
        "SQS_MAX_ATTRIBUTES",
        "SQS_MAX_MESSAGE_BYTES",
        "Sender",
        "aggregated_record_class",
        "chunks",
        "destination_of",
        "parse_dynamodb_stream_event",
        "parse_kafka_event",
        "parse_kinesis_event",
        "parse_sqs_event",
        "send_message_request",
        "send_sqs_batch",
        "sender_for",
        "sqs_batches",
        "stream_document",
    ],
}


@pytest.mark.parametrize("package", sorted(PINNED))
def test_each_public_packages_names_are_pinned(package: str) -> None:
    assert sorted(importlib.import_module(package).__all__) == PINNED[package]


def test_the_documented_subpackages_are_the_pinned_ones() -> None:
    assert sorted(PUBLIC_SUBPACKAGES) == sorted(set(PINNED) - {"lambda_inbox"})


def public_looking_modules(library: Path) -> list[str]:
    """The library's modules whose path has no segment with a leading `_` (other than the
    public ones): importable under a public-looking name."""
    found = []
    for path in sorted(library.rglob("*.py")):
        relative = path.relative_to(library).as_posix()
        parts = relative.removesuffix("/__init__.py").removesuffix(".py").split("/")
        if relative not in PUBLIC_MODULES and not any(part.startswith("_") for part in parts):
            found.append(relative)
    return found


def test_every_module_outside_the_public_ones_is_private_by_name() -> None:
    assert public_looking_modules(LIBRARY) == []


def test_a_public_looking_module_is_found(tmp_path: Path) -> None:
    for name in ("__init__.py", "wire.py", "_commit/send.py", "store/_inbox.py", "sources/sqs.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert public_looking_modules(tmp_path) == ["sources/sqs.py"]


def tool_sources() -> dict[str, str]:
    """Every Python source of the tools' distribution."""
    tools = REPO_ROOT / "tools" / "lambda_inbox_tools"
    return {str(path.relative_to(REPO_ROOT)): path.read_text() for path in tools.rglob("*.py")}


def test_the_tools_import_public_names_only() -> None:
    names = public_names()
    names["lambda_inbox"] = names["lambda_inbox"] | {"__version__"}  # the one version
    found = {
        name: imports
        for name, source in sorted(tool_sources().items())
        if (imports := private_imports(source, names))
    }
    assert found == {}


def test_a_tools_private_import_is_found() -> None:
    source = "def f():\n    from lambda_inbox.store._inbox import InboxStore\n"
    assert private_imports(source, public_names()) != []
