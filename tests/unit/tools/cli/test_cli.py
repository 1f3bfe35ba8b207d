"""The `lambda-inbox` command line without a running stack: help, usage errors and exit codes,
the missing extra, and the pieces of the mover (filters, rate, batching, FIFO fields, the move
task's progress and cancellation on a stubbed client). Commands against real endpoints are in
tests/integration/test_cli_*.py."""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws

from lambda_inbox.store import InboxRecord, Status
from lambda_inbox_tools.aws import resolved_region
from lambda_inbox_tools.cli import MISSING_EXTRA
from lambda_inbox_tools.cli.records import parse_duration
from lambda_inbox_tools.cli.render import payload_view
from lambda_inbox_tools.redrive import (
    Mover,
    NativeMoveUnsupported,
    Where,
    follow_move_task,
    start_move_task,
)
from lambda_inbox_tools.redrive.dead_letters import body_preview
from lambda_inbox_tools.redrive.entries import (
    BATCH_BYTES,
    batches_by_size,
    fifo_fields,
    sendable_attributes,
)
from lambda_inbox_tools.redrive.rate import TokenBucket
from tests.cli_support import Cli, process_env, run_process

COMMANDS = ("show", "failed", "reap", "redrive", "send", "stats", "local", "create-table")
SOURCE_ARN = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
DESTINATION_ARN = "arn:aws:sqs:us-east-1:123456789012:orders"


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


# ---- help -------------------------------------------------------------------------------------


def test_help_lists_every_command_with_a_session_example(cli: Cli) -> None:
    run = cli("--help")
    assert run.code == 0
    for name in COMMANDS:
        assert name in run.out
    assert "lambda-inbox redrive --from order-events-dlq --to order-events" in run.out
    assert "Exit status: 0 done, 1 failed, 2 usage error" in run.out


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(cli: Cli, name: str) -> None:
    run = cli(name, "--help")
    assert run.code == 0
    assert f"Usage: lambda-inbox {name}" in run.out
    if name != "local":
        assert "Example" in run.out
    if name in ("show", "failed", "reap", "stats", "create-table"):
        assert "--table" in run.out
    assert "--json" in run.out


def test_redrive_help_names_every_option(cli: Cli) -> None:
    out = cli("redrive", "--help").out
    for option in ("--from", "--to", "--where", "--limit", "--rate", "--dry-run", "--region"):
        assert option in out
    assert "--endpoint-url" in out


def test_python_dash_m_runs_the_command_line() -> None:
    run = run_process("--help")
    assert run.code == 0, run.err
    assert "Usage: lambda-inbox" in run.out


def test_without_the_cli_extra_it_says_what_to_install() -> None:
    # Typer made unimportable, as when `lambda-inbox[cli]` is not installed.
    code = (
        "import sys; sys.modules['typer'] = None\n"
        "from lambda_inbox_tools.cli import main\n"
        "raise SystemExit(main(['failed']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=process_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip() == MISSING_EXTRA
    assert "pip install 'lambda-inbox[cli]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# ---- usage errors (exit 2) and failures (exit 1) ----------------------------------------------


@pytest.mark.parametrize("name", ["failed", "stats", "create-table"])
def test_a_command_without_a_table_names_the_fix(cli: Cli, name: str) -> None:
    run = cli(name)
    assert run.code == 2
    assert "no table: pass --table or set INBOX_TABLE" in run.err
    assert run.out == ""


def test_show_without_a_table_names_the_fix(cli: Cli) -> None:
    run = cli("show", "order-events", "evt-1")
    assert run.code == 2
    assert "no table: pass --table or set INBOX_TABLE" in run.err


def test_the_table_comes_from_inbox_table_and_a_missing_one_is_a_usage_error(
    cli: Cli, aws: None
) -> None:
    run = cli("failed", INBOX_TABLE="ghost-inbox")
    assert run.code == 2
    assert "no table 'ghost-inbox'" in run.err
    assert "--table" in run.err


def test_a_usage_error_with_json_is_a_json_document(cli: Cli) -> None:
    run = cli("failed", "--json")
    assert run.code == 2
    assert run.json() == {"error": "no table: pass --table or set INBOX_TABLE", "exit_code": 2}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["failed", "--table", "t", "--since", "2x"], "e.g. 30m, 2h, 7d"),
        (["failed", "--table", "t", "--since", "0m"], "longer than zero"),
        (["failed", "--table", "t", "--limit", "0"], "--limit"),
        (["redrive", "--from", "a", "--to", "b", "--where", "no-equals-sign"], "ATTR=VALUE"),
        (["redrive", "--from", "a", "--to", "b", "--rate", "0"], "--rate"),
        (["redrive", "--from", "a"], "--to"),
        (["redrive", "--to", "b"], "--from"),
        (["show", "order-events"], "KEY"),
        (["no-such-command"], "No such command"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(cli: Cli, args: list[str], says: str) -> None:
    run = cli(*args)
    assert run.code == 2, run
    assert says in run.err
    assert run.out == ""


def test_an_unknown_queue_is_a_usage_error(cli: Cli, aws: None) -> None:
    boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="orders")
    run = cli("redrive", "--from", "no-such-dlq", "--to", "orders", "--region", "us-east-1")
    assert run.code == 2
    assert "--from: no queue 'no-such-dlq'" in run.err
    run = cli("stats", "--table", "t", "--queue", "nope", "--region", "us-east-1")
    assert run.code == 2
    assert "--queue: no queue 'nope'" in run.err


def test_redrive_to_the_queue_it_moves_from_is_refused(cli: Cli, aws: None) -> None:
    url = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="orders")["QueueUrl"]
    run = cli("redrive", "--from", "orders", "--to", url, "--region", "us-east-1")
    assert run.code == 2
    assert "same queue" in run.err


def test_reap_sweeps_once_and_dry_run_changes_nothing(cli: Cli, aws: None) -> None:
    from lambda_inbox.store import create_inbox_table

    dynamodb, sqs = boto3.client("dynamodb"), boto3.client("sqs")
    create_inbox_table(dynamodb, "inbox")
    dlq = sqs.create_queue(QueueName="notification-dlq")["QueueUrl"]
    stuck = InboxRecord(
        "customer-notifications",
        "evt-1",
        Status.FAILED,
        "fp",
        payload_snapshot=b'{"a": 1}',
        error_code="lease_expired",
        last_error="lease expired",
        open_since="2026-01-01T00:00:00.000+00:00",
    )
    dynamodb.put_item(TableName="inbox", Item=stuck.to_item())
    dlq_option = ("--dlq", "customer-notifications=notification-dlq")

    dry = cli("reap", "--table", "inbox", "--dry-run", "--json", *dlq_option)
    assert dry.code == 0, dry.err
    assert dry.json()["dead_lettered"] == 1 and dry.json()["dry_run"] is True
    assert "Messages" not in sqs.receive_message(QueueUrl=dlq, WaitTimeSeconds=0)

    done = cli("reap", "--table", "inbox", *dlq_option)
    assert done.code == 0, done.err
    assert "customer-notifications" in done.out
    (sent,) = sqs.receive_message(QueueUrl=dlq, MessageAttributeNames=["All"])["Messages"]
    assert sent["Body"] == '{"a": 1}'
    assert sent["MessageAttributes"]["inbox-message-key"]["StringValue"] == "evt-1"
    again = cli("reap", "--table", "inbox", "--json", *dlq_option)
    assert again.json()["dead_lettered"] == 0  # exactly once across runs


def test_reap_rejects_a_malformed_dlq_option(cli: Cli, aws: None) -> None:
    run = cli("reap", "--table", "inbox", "--dlq", "no-equals-sign")
    assert run.code == 2
    assert "CONSUMER=QUEUE" in run.err


def test_local_refuses_an_unknown_backend_and_a_bad_parameter(cli: Cli) -> None:
    """Usage errors exit 2 before anything starts (the run itself: tests/integration/local)."""
    run = cli("local", "--backend", "sqlite")
    assert run.code == 2
    assert "--backend" in run.err
    run = cli("local", "--parameter", "NoEqualsSign")
    assert run.code == 2
    assert "NAME=VALUE" in run.err


def test_create_table_then_again_fails(cli: Cli, aws: None) -> None:
    run = cli("create-table", "--table", "inbox", "--region", "us-east-1", "--json")
    assert run.code == 0, run.err
    assert run.json() == {"table": "inbox", "created": True}
    run = cli("create-table", "--table", "inbox", "--region", "us-east-1")
    assert run.code == 1
    assert "already exists" in run.err


def test_show_of_a_missing_record_exits_1(cli: Cli, aws: None) -> None:
    assert cli("create-table", "--table", "inbox", "--region", "us-east-1").code == 0
    run = cli("show", "order-events", "evt-404", "--table", "inbox", "--region", "us-east-1")
    assert run.code == 1
    assert "no record for consumer 'order-events' and key 'evt-404' in inbox" in run.err


def test_show_prints_a_record_written_through_the_store(cli: Cli, aws: None) -> None:
    assert cli("create-table", "--table", "inbox", "--region", "us-east-1").code == 0
    record = InboxRecord(
        consumer="order-events",
        message_key="evt-1",
        status=Status.FAILED,
        error_code="invalid_payload",
        last_error="lines.0.qty: Input should be a valid integer",
        failed_at="2026-01-01T00:00:00.000+00:00",
        open_since="2026-01-01T00:00:00.000+00:00",
        payload_snapshot=b'{"event_id": "evt-1", "qty": "x"}',
    )
    boto3.client("dynamodb", region_name="us-east-1").put_item(
        TableName="inbox", Item=record.to_item()
    )
    run = cli("show", "order-events", "evt-1", "--table", "inbox", "--region", "us-east-1")
    assert run.code == 0, run.err
    assert "FAILED" in run.out
    assert "invalid_payload" in run.out
    assert '"qty": "x"' in run.out


# ---- pieces -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30m", 1800), ("2h", 7200), ("7d", 604800), ("90s", 90), ("1w", 604800), ("1h30m", 5400)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2", "h", "2x", "-1h", "1h-", "2 hours"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def _message(**attributes: str) -> Any:
    return {
        "MessageId": "m-1",
        "ReceiptHandle": "r-1",
        "Body": "{}",
        "MessageAttributes": {
            name: {"DataType": "String", "StringValue": value} for name, value in attributes.items()
        },
    }


def test_where_matches_string_attributes_exactly() -> None:
    where = Where.parse("inbox-error-code=invalid_payload")
    assert where == Where("inbox-error-code", "invalid_payload")
    assert where.matches(_message(**{"inbox-error-code": "invalid_payload"}))
    assert not where.matches(_message(**{"inbox-error-code": "invalid_payload2"}))
    assert not where.matches(_message())
    assert Where.parse("note=a=b") == Where("note", "a=b")
    with pytest.raises(ValueError, match="ATTR=VALUE"):
        Where.parse("=x")


def test_the_token_bucket_paces_to_the_rate() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    bucket = TokenBucket(2.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(10):
        bucket.take(1)
    # A burst of 2, then 2 a second: 8 more take 4 seconds.
    assert now[0] == pytest.approx(4.0)
    slow = TokenBucket(0.5, clock=lambda: now[0], sleep=sleep)
    start = now[0]
    slow.take(1)
    slow.take(1)
    assert now[0] - start == pytest.approx(2.0)


def test_send_batches_hold_at_most_ten_entries_and_the_byte_limit() -> None:
    small = [{"Id": str(n), "MessageBody": "x"} for n in range(23)]
    assert [len(batch) for batch in batches_by_size(small)] == [10, 10, 3]
    big = [{"Id": str(n), "MessageBody": "y" * (BATCH_BYTES // 2 + 1)} for n in range(3)]
    assert [len(batch) for batch in batches_by_size(big)] == [1, 1, 1]
    attributes = {"a": {"DataType": "Binary", "BinaryValue": b"z" * (BATCH_BYTES // 2)}}
    mixed = [{"Id": "0", "MessageBody": "y" * 10, "MessageAttributes": attributes}] * 2
    assert [len(batch) for batch in batches_by_size(mixed)] == [1, 1]


def test_attributes_are_sent_as_received() -> None:
    message: Any = {
        "MessageAttributes": {
            "s": {"DataType": "String", "StringValue": "v", "StringListValues": []},
            "n": {"DataType": "Number.int", "StringValue": "42"},
            "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        }
    }
    assert sendable_attributes(message) == {
        "s": {"DataType": "String", "StringValue": "v"},
        "n": {"DataType": "Number.int", "StringValue": "42"},
        "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
    }


def test_fifo_fields_come_from_the_source_message_else_the_key_and_message_id() -> None:
    fifo: Any = {
        "MessageId": "m-1",
        "Attributes": {"MessageGroupId": "g-1", "MessageDeduplicationId": "d-1"},
    }
    assert fifo_fields(fifo) == {"MessageGroupId": "g-1", "MessageDeduplicationId": "d-1"}
    standard = _message(**{"inbox-message-key": "evt-9"})
    fields = fifo_fields(standard)
    assert fields["MessageGroupId"] == "evt-9"
    assert fields == fifo_fields(standard)  # a rerun sends the same deduplication id
    assert len(fields["MessageDeduplicationId"]) == 64


def test_body_previews_decode_base64_bodies() -> None:
    message = _message(**{"inbox-body-encoding": "base64"})
    message["Body"] = base64.b64encode(b"binary \xff value").decode()
    assert body_preview(message).startswith("(base64) binary")
    long = _message()
    long["Body"] = "a\n" * 100
    assert len(body_preview(long)) == 80
    assert "\n" not in body_preview(long)


def test_payload_views() -> None:
    assert payload_view(b'{"a": 1}', truncated=False) == {
        "bytes": 8,
        "truncated": False,
        "encoding": "json",
        "value": {"a": 1},
    }
    assert payload_view(b'{"a": ', truncated=True)["encoding"] == "text"
    # Cut inside a two-byte character: still text.
    cut = payload_view("aé".encode()[:2], truncated=True)
    assert cut["encoding"] == "text"
    assert cut["value"] == "a"
    binary = payload_view(b"\xff\xfe\x00", truncated=False)
    assert binary["encoding"] == "base64"
    assert base64.b64decode(binary["value"]) == b"\xff\xfe\x00"


# ---- SQS's message move task, on a stubbed client ---------------------------------------------


@pytest.fixture
def stubbed() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("sqs", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _task(status: str, moved: int, to_move: int = 10, handle: str | None = "h-1") -> Any:
    task: dict[str, Any] = {
        "Status": status,
        "SourceArn": SOURCE_ARN,
        "DestinationArn": DESTINATION_ARN,
        "ApproximateNumberOfMessagesMoved": moved,
        "ApproximateNumberOfMessagesToMove": to_move,
    }
    if handle:
        task["TaskHandle"] = handle
    return {"Results": [task]}


LIST = {"SourceArn": SOURCE_ARN, "MaxResults": 10}


def test_the_move_task_is_followed_to_its_end(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response(
        "start_message_move_task",
        {"TaskHandle": "h-1"},
        {
            "SourceArn": SOURCE_ARN,
            "DestinationArn": DESTINATION_ARN,
            "MaxNumberOfMessagesPerSecond": 50,
        },
    )
    stubber.add_response("list_message_move_tasks", _task("RUNNING", 3), LIST)
    stubber.add_response("list_message_move_tasks", _task("COMPLETED", 10, handle=None), LIST)
    handle = start_move_task(client, SOURCE_ARN, DESTINATION_ARN, rate=50)
    seen: list[tuple[str | None, int]] = []
    report = follow_move_task(
        client,
        SOURCE_ARN,
        handle,
        on_progress=lambda r: seen.append((r.status, r.moved)),
        sleep=lambda _: None,
    )
    assert seen == [("RUNNING", 3), ("COMPLETED", 10)]
    assert (report.moved, report.to_move, report.status, report.ok) == (10, 10, "COMPLETED", True)
    assert report.document()["mode"] == "native"


def test_ctrl_c_cancels_the_move_task(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response("list_message_move_tasks", _task("RUNNING", 4), LIST)
    stubber.add_response(
        "cancel_message_move_task", {"ApproximateNumberOfMessagesMoved": 4}, {"TaskHandle": "h-1"}
    )
    stubber.add_response("list_message_move_tasks", _task("CANCELLED", 4, handle=None), LIST)

    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    report = follow_move_task(client, SOURCE_ARN, "h-1", sleep=interrupted)
    assert report.interrupted
    assert (report.status, report.moved, report.ok) == ("CANCELLED", 4, False)


def test_a_failed_move_task_counts_what_it_did_not_move(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    failed = _task("FAILED", 6, handle=None)
    failed["Results"][0]["FailureReason"] = "AccessDenied"
    stubber.add_response("list_message_move_tasks", failed, LIST)
    report = follow_move_task(client, SOURCE_ARN, "h-1", sleep=lambda _: None)
    assert (report.moved, report.failed, report.ok) == (6, 4, False)
    assert report.errors == ["AccessDenied"]


@pytest.mark.parametrize(
    ("code", "status"),
    [("500", 500), ("UnsupportedOperation", 400), ("InvalidParameterValue", 400)],
)
def test_an_endpoint_without_move_tasks_is_detected(
    stubbed: tuple[Any, Stubber], code: str, status: int
) -> None:
    client, stubber = stubbed
    stubber.add_client_error(
        "start_message_move_task", service_error_code=code, http_status_code=status
    )
    with pytest.raises(NativeMoveUnsupported):
        start_move_task(client, SOURCE_ARN, DESTINATION_ARN)


def test_other_move_task_errors_are_not_hidden(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_client_error(
        "start_message_move_task", service_error_code="AccessDenied", http_status_code=403
    )
    with pytest.raises(ClientError):
        start_move_task(client, SOURCE_ARN, DESTINATION_ARN)


# ---- the mover's bookkeeping, on a stubbed client ---------------------------------------------

SOURCE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
DESTINATION_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"


def _received(n: int) -> Any:
    return {
        "MessageId": f"m-{n}",
        "ReceiptHandle": f"r-{n}",
        "Body": f"body-{n}",
        "MessageAttributes": {
            "inbox-error-code": {"DataType": "String", "StringValue": "invalid_payload"}
        },
    }


def test_a_refused_send_is_counted_failed_and_not_deleted(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response("receive_message", {"Messages": [_received(1), _received(2)]})
    stubber.add_response(
        "send_message_batch",
        {
            "Successful": [{"Id": "0", "MessageId": "n-1", "MD5OfMessageBody": "x"}],
            "Failed": [{"Id": "1", "SenderFault": True, "Code": "Throttled", "Message": "slow"}],
        },
    )
    stubber.add_response(
        "delete_message_batch",
        {"Successful": [{"Id": "0"}], "Failed": []},
        {"QueueUrl": SOURCE_URL, "Entries": [{"Id": "0", "ReceiptHandle": "r-1"}]},
    )
    stubber.add_response("receive_message", {"Messages": []})
    stubber.add_response(
        "change_message_visibility_batch",
        {"Successful": [{"Id": "0"}], "Failed": []},
        {
            "QueueUrl": SOURCE_URL,
            "Entries": [{"Id": "0", "ReceiptHandle": "r-2", "VisibilityTimeout": 0}],
        },
    )
    report = Mover(client, SOURCE_URL, DESTINATION_URL).run()
    assert (report.moved, report.failed, report.skipped, report.ok) == (1, 1, 0, False)
    assert report.errors == ["send refused: Throttled: slow"]


def test_a_batch_refused_for_one_entry_is_sent_one_by_one(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response("receive_message", {"Messages": [_received(1), _received(2)]})
    stubber.add_client_error(
        "send_message_batch", service_error_code="InvalidParameterValue", http_status_code=400
    )
    stubber.add_response("send_message", {"MessageId": "n-1", "MD5OfMessageBody": "x"})
    stubber.add_client_error(
        "send_message",
        service_error_code="InvalidParameterValue",
        service_message="Message too long",
    )
    stubber.add_response(
        "delete_message_batch",
        {"Successful": [{"Id": "0"}], "Failed": []},
        {"QueueUrl": SOURCE_URL, "Entries": [{"Id": "0", "ReceiptHandle": "r-1"}]},
    )
    stubber.add_response("receive_message", {"Messages": []})
    stubber.add_response(
        "change_message_visibility_batch", {"Successful": [{"Id": "0"}], "Failed": []}
    )
    report = Mover(client, SOURCE_URL, DESTINATION_URL).run()
    assert (report.moved, report.failed) == (1, 1)
    assert "Message too long" in report.errors[0]


def test_a_stop_during_a_receive_settles_what_the_receive_hid(aws: None) -> None:
    import threading

    sqs = boto3.client("sqs")
    source = sqs.create_queue(QueueName="stop-dlq")["QueueUrl"]
    target = sqs.create_queue(QueueName="stop-target")["QueueUrl"]
    for n in range(5):
        sqs.send_message(QueueUrl=source, MessageBody=f"m{n}")
    stop = threading.Event()
    receive = sqs.receive_message

    def receive_then_signal(**kwargs: Any) -> Any:
        answer = receive(**kwargs)
        stop.set()  # the signal arrives while the receive is in flight
        return answer

    sqs.receive_message = receive_then_signal  # type: ignore[method-assign]
    report = Mover(sqs, source, target, visibility_timeout=300, stop=stop).run()
    assert report.interrupted and report.moved == 0
    depth = sqs.get_queue_attributes(QueueUrl=source, AttributeNames=["All"])["Attributes"]
    assert depth["ApproximateNumberOfMessages"] == "5"  # visible again, not hidden for 300 s
    assert depth["ApproximateNumberOfMessagesNotVisible"] == "0"


def test_the_region_comes_from_the_option_then_aws_region_then_aws_default_region() -> None:
    both = {"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-west-2"}
    assert resolved_region("ap-south-1", both) == "ap-south-1"
    assert resolved_region(None, both) == "eu-west-1"
    assert resolved_region(None, {"AWS_DEFAULT_REGION": "us-west-2"}) == "us-west-2"
    assert resolved_region(None, {}) is None  # the profile's, if any


def test_aws_region_alone_is_enough_for_a_command(cli: Cli, aws: None) -> None:
    """boto3 reads AWS_DEFAULT_REGION only; the command line reads AWS_REGION too, as the AWS
    CLI does."""
    assert cli("create-table", "--table", "inbox", "--region", "eu-west-1").code == 0
    run = cli(
        "show",
        "order-events",
        "evt-1",
        "--table",
        "inbox",
        AWS_REGION="eu-west-1",
        AWS_DEFAULT_REGION=None,
    )
    assert "no AWS region" not in run.err
    assert run.code == 1 and "evt-1" in run.out + run.err  # found the table: no such record
