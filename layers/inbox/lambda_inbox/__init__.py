"""lambda_inbox: effectively-once message processing for AWS Lambda on DynamoDB.

The inbox record of every message commits in the same `TransactWriteItems` as the domain writes
it causes, so a redelivered message finds its record and becomes a cheap no-op.
"""

from typing import TYPE_CHECKING, Any

from .config import InboxConfig, RetryPolicy
from .consumer import InboxConsumer
from .errors import (
    ConfigurationError,
    ErrorCode,
    InboxError,
    PoisonMessage,
    UnitOfWorkError,
    UnsupportedEvent,
)
from .identity import KeyStrategy
from .messages import InboundMessage
from .outcomes import MessageResult, Outcome
from .unit_of_work import UnitOfWork
from .write_actions import ConditionFailures, FailedCondition

__all__ = [
    "ConditionFailures",
    "ConfigurationError",
    "ErrorCode",
    "FailedCondition",
    "InboundMessage",
    "InboxConfig",
    "InboxConsumer",
    "InboxError",
    "KeyStrategy",
    "LeaseContext",
    "LeasePolicy",
    "MessageResult",
    "OutboxMessage",
    "OutboxRelay",
    "Outcome",
    "PoisonMessage",
    "RetryPolicy",
    "UnitOfWork",
    "UnitOfWorkError",
    "UnsupportedEvent",
    "ValueFormats",
]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from .kafka_values import ValueFormats
    from .lease import LeaseContext, LeasePolicy
    from .outbox import OutboxMessage
    from .relay import OutboxRelay

#: Names loaded on first use: a transactional consumer never imports leased mode or the relay,
#: and a JSON consumer never imports the Kafka value formats.
_LAZY = {
    "LeaseContext": "lease",
    "LeasePolicy": "lease",
    "OutboxMessage": "outbox",
    "OutboxRelay": "relay",
    "ValueFormats": "kafka_values",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
