"""Sending a batch of entries to the destination: what was sent and what was refused, each
entry sent alone when SQS refuses the whole batch for one entry's sake (the library's
`lambda_inbox.wire.send_sqs_batch`, which the dead-letter queue uses too)."""

from __future__ import annotations

from lambda_inbox.wire import send_sqs_batch as send_batch

__all__ = ["send_batch"]
