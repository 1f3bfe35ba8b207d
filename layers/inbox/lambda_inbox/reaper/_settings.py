"""The reaper's settings: where it looks and where it sends, read from the Lambda environment."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import timedelta

from lambda_inbox._config import FAILED_RETENTION
from lambda_inbox._errors import ConfigurationError
from lambda_inbox._internal import _Settings


class ReaperSettings(_Settings):
    """Where the reaper looks and where it sends; `from_env` reads the Lambda environment.

    `table`: the inbox table; `dead_letter_queues`: the dead-letter queue URL per consumer name,
    `default_dead_letter_queue` for the others; `lease_grace`: how long after its expiry a lease
    is left to the next delivery; `page_size`: records a query reads; `claim_timeout`: how long
    a run's claim on a FAILED record holds; `stop_margin`: time kept back from the invocation's
    deadline; `failed_retention`: how long a FAILED record the reaper makes (an expired lease)
    is kept."""

    __slots__ = (
        "claim_timeout",
        "dead_letter_queues",
        "default_dead_letter_queue",
        "failed_retention",
        "lease_grace",
        "page_size",
        "stop_margin",
        "table",
    )

    def __init__(
        self,
        table: str,
        dead_letter_queues: Mapping[str, str] | None = None,
        default_dead_letter_queue: str | None = None,
        lease_grace: timedelta = timedelta(minutes=15),
        page_size: int = 100,
        claim_timeout: timedelta = timedelta(minutes=5),
        stop_margin: timedelta = timedelta(seconds=5),
        failed_retention: timedelta = FAILED_RETENTION,
    ) -> None:
        if not table:
            raise ConfigurationError("the reaper needs the inbox table (set INBOX_TABLE)")
        if not 1 <= page_size <= 1000:
            raise ConfigurationError("page_size must be between 1 and 1000")
        self.table = table
        self.dead_letter_queues: Mapping[str, str] = dict(dead_letter_queues or {})
        self.default_dead_letter_queue = default_dead_letter_queue
        self.lease_grace = lease_grace
        self.page_size = page_size
        self.claim_timeout = claim_timeout
        self.stop_margin = stop_margin
        self.failed_retention = failed_retention

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ReaperSettings:
        """`INBOX_TABLE` (required), `INBOX_REAPER_DLQ_URLS` (JSON object consumer -> queue URL),
        `DEAD_LETTER_QUEUE_URL` (any other consumer), `INBOX_REAPER_LEASE_GRACE_SECONDS` (900),
        `INBOX_REAPER_PAGE_SIZE` (100), `INBOX_REAPER_CLAIM_SECONDS` (300),
        `INBOX_REAPER_STOP_MARGIN_SECONDS` (5), `INBOX_FAILED_RETENTION_DAYS` (14, as the
        consumers')."""
        env = os.environ if environ is None else environ
        queues: dict[str, str] = {}
        raw = env.get("INBOX_REAPER_DLQ_URLS", "").strip()
        if raw:
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError as error:
                raise ConfigurationError(f"INBOX_REAPER_DLQ_URLS is not JSON: {error}") from None
            if not isinstance(parsed, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in parsed.items()
            ):
                raise ConfigurationError("INBOX_REAPER_DLQ_URLS must map consumer names to URLs")
            queues = {name: url for name, url in parsed.items() if url}

        def seconds(name: str, default: float) -> timedelta:
            text = env.get(name, "")
            try:
                return timedelta(seconds=float(text)) if text else timedelta(seconds=default)
            except ValueError:
                raise ConfigurationError(f"{name} must be a number of seconds") from None

        def days(name: str, default: timedelta) -> timedelta:
            text = env.get(name, "")
            try:
                return timedelta(days=float(text)) if text else default
            except ValueError:
                raise ConfigurationError(f"{name} must be a number of days") from None

        page = env.get("INBOX_REAPER_PAGE_SIZE", "")
        return cls(
            table=env.get("INBOX_TABLE", ""),
            dead_letter_queues=queues,
            default_dead_letter_queue=env.get("DEAD_LETTER_QUEUE_URL") or None,
            lease_grace=seconds("INBOX_REAPER_LEASE_GRACE_SECONDS", 900),
            page_size=int(page) if page.isdigit() else 100,
            claim_timeout=seconds("INBOX_REAPER_CLAIM_SECONDS", 300),
            stop_margin=seconds("INBOX_REAPER_STOP_MARGIN_SECONDS", 5),
            failed_retention=days("INBOX_FAILED_RETENTION_DAYS", FAILED_RETENTION),
        )

    def queue_for(self, consumer: str) -> str | None:
        return self.dead_letter_queues.get(consumer) or self.default_dead_letter_queue
