"""Exceptions raised by lambda_inbox.

`PoisonMessage` is the one handlers raise themselves: it declares that a message can never
succeed, so it is dead-lettered and acknowledged instead of being retried in vain.
"""

from __future__ import annotations


class InboxError(Exception):
    """Base class of every error raised by lambda_inbox."""


class ConfigurationError(InboxError, ValueError):
    """The inbox was configured inconsistently (missing table name, bad limits...)."""


class UnitOfWorkError(InboxError, ValueError):
    """A handler asked for writes DynamoDB would refuse (checked before any call)."""


class PoisonMessage(InboxError):
    """The message will never succeed: dead-letter it and acknowledge it.

    `code` becomes the `inbox-error-code` attribute of the dead-lettered message.
    """

    def __init__(self, reason: str, *, code: str = "rejected_by_handler") -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
