"""Correct consumers in every return style AWS accepts (devkit.zoo's controls): the check must
pass each, whatever it returns. Lambda reads a partial batch response only with
`ReportBatchItemFailures`; with it, None, `{}` and `{"batchItemFailures": []}` acknowledge the
whole batch, and an exception fails all of it (lambda_inbox_tools/batch_responses.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .zoo_ledger import Ledger, deliveries
from .zoo_mapping import REPORT_FAILURES, Deployed, deployed

Handler = Callable[[dict[str, Any], Any], Any]


def raising(ledger: Ledger, answer: Any) -> Handler:
    """A transactional inbox that raises on any failure but a duplicate's, and returns `answer`
    (AWS's basic style: raise on failure, return nothing)."""

    def handler(event: dict[str, Any], context: Any) -> Any:
        for _, message in deliveries(event):
            ledger.commit(str(message["event_id"]))
        return answer

    return handler


def returns_none(ledger: Ledger) -> Handler:
    """Raises on failure, returns None; no template (partial responses read, as by default)."""
    return raising(ledger, None)


def returns_none_without_the_setting(ledger: Ledger) -> Deployed:
    """Raises on failure, returns None, deployed without `ReportBatchItemFailures`."""
    return deployed(raising(ledger, None))


def returns_an_empty_object(ledger: Ledger) -> Deployed:
    """Raises on failure, returns `{}`, deployed with `ReportBatchItemFailures`."""
    return deployed(raising(ledger, {}), **REPORT_FAILURES)
