"""An inbox that forgets a message before its queue and DLQ do is refused, with the fix
(lambda_inbox_tools.local.retention): by `lambda-inbox local`, before any service starts, and by
`make template-lint` (scripts/check_retention.py) for every template of this repository."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from devkit.paths import REPO_ROOT
from lambda_inbox_tools.local.retention import retention_problems
from lambda_inbox_tools.local.stack import read_local_stack
from tests.cli_support import Cli

SQS = "http://127.0.0.1:4566"


def template(
    *, queue_days: int | None, dlq_days: int | None, inbox_days: str | None, fifo: bool = False
) -> str:
    def retention(days: int | None) -> str:
        return f"\n      MessageRetentionPeriod: {days * 86_400}" if days else ""

    fifo_line = "\n      FifoQueue: true" if fifo else ""
    inbox = f'\n          INBOX_RETENTION_DAYS: "{inbox_days}"' if inbox_days else ""
    return f"""Transform: AWS::Serverless-2016-10-31
Resources:
  Inbox:
    Type: AWS::DynamoDB::Table
    Properties:
      AttributeDefinitions: [{{AttributeName: pk, AttributeType: S}}]
      KeySchema: [{{AttributeName: pk, KeyType: HASH}}]
  Orders:
    Type: AWS::SQS::Queue
    Properties:{fifo_line}{retention(queue_days)}
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt OrdersDLQ.Arn
        maxReceiveCount: 5
  OrdersDLQ:
    Type: AWS::SQS::Queue
    Properties:{fifo_line}{retention(dlq_days)}
  Consumer:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: .
      Handler: app.handler
      Runtime: python3.13
      Environment:
        Variables:
          INBOX_TABLE: !Ref Inbox{inbox}
      Events:
        FromOrders:
          Type: SQS
          Properties:
            Queue: !GetAtt Orders.Arn
"""


def problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "template.yaml"
    path.write_text(text)
    return retention_problems(read_local_stack(path, sqs_endpoint=SQS))


@pytest.mark.parametrize(
    ("queue_days", "dlq_days", "fifo", "needed"),
    [
        (None, 14, False, 18),  # standard: 14 days from the first send, then 4 more redriven
        (4, None, False, 8),  # SQS's default 4 days for the DLQ
        (4, 14, True, 22),  # FIFO: 4 in the queue, 14 more once moved, 4 more redriven
        (14, 14, False, 28),  # SQS's longest retention everywhere
    ],
)
def test_a_retention_shorter_than_the_window_is_refused_and_the_window_accepted(
    tmp_path: Path, queue_days: int | None, dlq_days: int | None, fifo: bool, needed: int
) -> None:
    (problem,) = problems(
        tmp_path, template(queue_days=queue_days, dlq_days=dlq_days, inbox_days=None, fifo=fifo)
    )
    assert problem.startswith("Consumer: its inbox keeps records 7 days")
    assert f"Set INBOX_RETENTION_DAYS to {needed} or more for Consumer" in problem
    assert (
        problems(
            tmp_path,
            template(queue_days=queue_days, dlq_days=dlq_days, inbox_days=str(needed), fifo=fifo),
        )
        == []
    )
    short = problems(
        tmp_path,
        template(queue_days=queue_days, dlq_days=dlq_days, inbox_days=str(needed - 1), fifo=fifo),
    )
    assert len(short) == 1


def test_local_refuses_the_template_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(template(queue_days=None, dlq_days=14, inbox_days=None))
    run = Cli(capsys)("local", "--template", str(path), "--no-demo")
    assert run.code == 2
    assert "Set INBOX_RETENTION_DAYS to 18 or more for Consumer" in run.out + run.err


def check_retention(capsys: pytest.CaptureFixture[str], *templates: Path) -> tuple[int, str]:
    """scripts/check_retention.py's exit status and output, run in this process."""
    script = runpy.run_path(str(REPO_ROOT / "scripts" / "check_retention.py"))
    code = script["main"]([str(path) for path in templates])
    return code, capsys.readouterr().out


def test_every_template_of_this_repository_keeps_records_long_enough(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make template-lint` runs this check, and it fails on a template that does not."""
    code, out = check_retention(capsys)
    assert code == 0, out
    assert "docs/getting-started.md (its template.yaml): ok" in out
    assert "examples/invoices/template.yaml: ok" in out
    short = tmp_path / "template.yaml"
    short.write_text(template(queue_days=None, dlq_days=14, inbox_days="7"))
    code, out = check_retention(capsys, short)
    assert code == 1
    assert "Set INBOX_RETENTION_DAYS to 18 or more" in out
