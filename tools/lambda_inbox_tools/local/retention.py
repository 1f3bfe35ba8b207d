"""An inbox consumer's retention against its queue's redelivery window: refused when shorter.

A message can come back as long as SQS keeps it: in its queue, then in the queue's dead-letter
queue, from which an operator redrives it back to the queue. If the consumer's inbox record has
expired by then (`INBOX_RETENTION_DAYS`, 7 days when unset), the message is applied a second
time. How long SQS keeps a message (AWS's "Setting-up dead-letter queue retention"): a standard
queue's message expires by its original enqueue time, in the dead-letter queue too, so it can be
redriven until the longer of the two retentions has passed; a FIFO queue's starts again when it
is moved, so until their sum. Redriven, it is a new message of the queue, kept as long again.
A queue without `MessageRetentionPeriod` keeps messages SQS's default 4 days.

`retention_problems` says, for each SQS-fed function with an inbox (`INBOX_TABLE`), what is too
short and the fix; `lambda-inbox local` refuses such a template (`refuse_short_retention`), and
so does `make template-lint` (scripts/check_retention.py) for this repository's templates.
"""

from __future__ import annotations

from datetime import timedelta

from lambda_inbox import Retention

from .cfn import TemplateError
from .template import FunctionSpec, QueueSpec, SqsEventSpec, Stack

#: SQS's retention of a queue that does not set `MessageRetentionPeriod`.
SQS_DEFAULT_RETENTION = timedelta(days=4)


def retention_problems(stack: Stack) -> list[str]:
    """What each inbox consumer of an SQS queue keeps too briefly, with the fix (none: [])."""
    problems = []
    for function in stack.functions:
        if "INBOX_TABLE" not in function.environment:
            continue
        kept = inbox_retention(function)
        for event in function.events:
            if not isinstance(event, SqsEventSpec):
                continue
            queue = stack.queue_by_arn(event.queue_arn)
            window, reason = redelivery_window(stack, queue)
            if kept < window:
                needed = -(-window.total_seconds() // 86_400)  # whole days, rounded up
                problems.append(
                    f"{function.logical_id}: its inbox keeps records {_days(kept)} but a message "
                    f"of {queue.logical_id} can come back for {_days(window)} ({reason}): one "
                    f"redriven after its record expired is applied twice. Set INBOX_RETENTION_DAYS "
                    f"to {needed:.0f} or more for {function.logical_id}, or keep messages "
                    "for less time in the queue and its dead-letter queue."
                )
    return problems


def refuse_short_retention(stack: Stack) -> None:
    """`TemplateError` naming every problem of `retention_problems`."""
    problems = retention_problems(stack)
    if problems:
        raise TemplateError("\n".join(problems))


def inbox_retention(function: FunctionSpec) -> timedelta:
    """How long the function's inbox keeps a completed record."""
    days = function.environment.get("INBOX_RETENTION_DAYS")
    try:
        return timedelta(days=float(days)) if days else Retention().completed
    except ValueError:
        raise TemplateError(
            f"{function.logical_id}: INBOX_RETENTION_DAYS must be a number of days, not {days!r}"
        ) from None


def redelivery_window(stack: Stack, queue: QueueSpec) -> tuple[timedelta, str]:
    """How long after it was sent a message of `queue` can still be delivered, and why."""
    kept = _retention(queue)
    if not queue.dead_letter_arn:
        return kept, f"the queue keeps messages {_days(kept)}"
    dead_letters = stack.queue_by_arn(queue.dead_letter_arn)
    also = _retention(dead_letters)
    if queue.fifo:  # moved to the dead-letter queue, a FIFO message's retention starts again
        redrivable = kept + also
        how = f"{_days(kept)} in the queue, then {_days(also)} in {dead_letters.logical_id}"
    else:  # a standard queue's message expires by when it was first sent, wherever it is
        redrivable = max(kept, also)
        how = f"until {_days(redrivable)} after it was sent in {dead_letters.logical_id}"
    return redrivable + kept, f"{how}, and {_days(kept)} in the queue again once redriven"


def _retention(queue: QueueSpec) -> timedelta:
    seconds = queue.attributes.get("MessageRetentionPeriod")
    return timedelta(seconds=int(seconds)) if seconds else SQS_DEFAULT_RETENTION


def _days(span: timedelta) -> str:
    days = span.total_seconds() / 86_400
    return f"{days:g} day" + ("" if days == 1 else "s")
