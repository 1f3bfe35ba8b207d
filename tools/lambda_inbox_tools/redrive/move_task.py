"""SQS's own message move task (StartMessageMoveTask): start it, follow it, cancel it on Ctrl-C.

Used by `lambda-inbox redrive` when no filter, limit or dry run asks for the client-side mover.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..aws import error_code, error_message
from .report import MoveReport, ProgressCallback

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

#: The highest MaxNumberOfMessagesPerSecond SQS accepts for a move task.
NATIVE_MAX_RATE = 500
#: Error codes meaning "this endpoint cannot run a message move task here".
_UNSUPPORTED_CODES = frozenset(
    {
        "NotImplemented",
        "NotImplementedException",
        "UnsupportedOperation",
        "AWS.SimpleQueueService.UnsupportedOperation",
        "InvalidAction",
        "UnknownOperation",
        "UnknownOperationException",
        # AWS: "Source queue must be configured as a Dead Letter Queue."
        "InvalidParameterValue",
    }
)


class NativeMoveUnsupported(Exception):
    """The endpoint cannot run StartMessageMoveTask for these queues; the reason is the text."""


def is_unsupported(error: ClientError) -> bool:
    code = error_code(error)
    if code in _UNSUPPORTED_CODES:
        return True
    # An endpoint that does not know the action at all (local emulators) answers with a bare
    # HTTP 500/501 that botocore cannot parse: the code is then the status number.
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code.isdigit() and status in (400, 404, 500, 501)


def start_move_task(
    sqs: SQSClient, source_arn: str, destination_arn: str, *, rate: int | None = None
) -> str:
    """StartMessageMoveTask; its task handle. `NativeMoveUnsupported` when the endpoint cannot.

    Pass a client without retries: an endpoint without the action then answers at once.
    """
    request: dict[str, Any] = {"SourceArn": source_arn, "DestinationArn": destination_arn}
    if rate is not None:
        request["MaxNumberOfMessagesPerSecond"] = rate
    try:
        return sqs.start_message_move_task(**request)["TaskHandle"]
    except NotImplementedError as error:  # moto in-process
        raise NativeMoveUnsupported(
            "the endpoint does not implement StartMessageMoveTask"
        ) from error
    except ClientError as error:
        if not is_unsupported(error):
            raise
        code = error_code(error)
        if code.isdigit():
            reason = f"the endpoint answered HTTP {code} to StartMessageMoveTask"
        else:
            reason = f"{code}: {error_message(error).splitlines()[0][:200]}"
        raise NativeMoveUnsupported(reason) from error


def follow_move_task(
    sqs: SQSClient,
    source_arn: str,
    handle: str,
    *,
    on_progress: ProgressCallback | None = None,
    poll_seconds: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> MoveReport:
    """Follow a move task to its end with ListMessageMoveTasks, reporting progress.

    Ctrl-C cancels the task (CancelMessageMoveTask) and returns what it had moved by then.
    """
    progress = on_progress or (lambda report: None)
    report = MoveReport(mode="native", status="RUNNING")
    try:
        while True:
            _update(report, _task(sqs, source_arn, handle))
            progress(report)
            if report.status not in ("RUNNING", "CANCELLING"):
                break
            sleep(poll_seconds)
    except KeyboardInterrupt:
        report.interrupted = True
        try:
            sqs.cancel_message_move_task(TaskHandle=handle)
        except ClientError as error:  # it finished meanwhile
            report.note_error(f"cancel: {error_code(error)}: {error_message(error)}")
        for _ in range(10):
            _update(report, _task(sqs, source_arn, handle))
            if report.status not in ("RUNNING", "CANCELLING"):
                break
            sleep(poll_seconds)
    if report.status == "FAILED":
        report.failed = max(0, (report.to_move or 0) - report.moved)
    return report


def _task(sqs: SQSClient, source_arn: str, handle: str) -> Mapping[str, Any]:
    results = list(sqs.list_message_move_tasks(SourceArn=source_arn, MaxResults=10)["Results"])
    for task in results:  # only running tasks carry their handle
        if task.get("TaskHandle") == handle:
            return task
    return results[0] if results else {}


def _update(report: MoveReport, task: Mapping[str, Any]) -> None:
    report.status = str(task.get("Status", report.status))
    report.moved = int(task.get("ApproximateNumberOfMessagesMoved", report.moved))
    to_move = task.get("ApproximateNumberOfMessagesToMove")
    if to_move is not None:
        report.to_move = int(to_move)
    reason = task.get("FailureReason")
    if reason:
        report.note_error(str(reason))
