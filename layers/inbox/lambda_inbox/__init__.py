"""lambda_inbox: effectively-once message processing for AWS Lambda on DynamoDB.

The inbox record of every message commits in the same `TransactWriteItems` as the domain writes
it causes, so a redelivered message finds its record and becomes a cheap no-op.
"""

from typing import TYPE_CHECKING, Any

from lambda_inbox._commit.actions import ConditionFailures, FailedCondition
from lambda_inbox._commit.unit_of_work import UnitOfWork
from lambda_inbox._config import GroupCommit, InboxConfig, Retention, SourceSettings
from lambda_inbox._errors import (
    ConfigurationError,
    ErrorCode,
    InboxError,
    PoisonMessage,
    UnitOfWorkError,
    UnsupportedEvent,
)
from lambda_inbox._internal import RetryPolicy
from lambda_inbox._messages import InboundMessage
from lambda_inbox._outcomes import MessageResult, Outcome
from lambda_inbox._sources.identity import KeyStrategy

__all__ = [
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
]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from lambda_inbox._consumer import InboxConsumer
    from lambda_inbox._decoding.limits import DecodingLimits
    from lambda_inbox._leases.leased import LeaseContext, LeasePolicy
    from lambda_inbox._options import Clients, CreatesItem, Decide, Leased, Observability
    from lambda_inbox._outbox.relay import OutboxRelay
    from lambda_inbox._powertools.batch import InboxBatchProcessor
    from lambda_inbox._powertools.idempotency import PowertoolsIdempotency
    from lambda_inbox._sources.envelopes import Envelope, current_envelope
    from lambda_inbox._sources.values import ValueFormats, generated_message
    from lambda_inbox.store._outbox_item import OutboxMessage

#: Names loaded on first use: a transactional consumer never imports leased mode or the relay, a
#: JSON consumer never imports the Kafka value formats, and a consumer that names no parameter
#: group never imports them; the consumer and the stages it assembles load with `InboxConsumer`,
#: which the reaper, the outbox relay, the command line and a test of a handler's writes never
#: name.
_LAZY = {
    "InboxConsumer": "_consumer",
    "Clients": "_options",
    "CreatesItem": "_options",
    "Decide": "_options",
    "Leased": "_options",
    "Observability": "_options",
    "DecodingLimits": "_decoding.limits",
    "LeaseContext": "_leases.leased",
    "LeasePolicy": "_leases.policy",
    "OutboxMessage": "store._outbox_item",
    "OutboxRelay": "_outbox.relay",
    "InboxBatchProcessor": "_powertools.batch",
    "PowertoolsIdempotency": "_powertools.idempotency",
    "ValueFormats": "_sources.values",
    "Envelope": "_sources.envelopes",
    "current_envelope": "_sources.envelopes",
    "generated_message": "_sources.values",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
