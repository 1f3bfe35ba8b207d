"""`lambda-inbox local` on another team's template (examples/invoices), as its user runs it: the
stack comes up with none of this repository's parameters, keeps running and prints what reaches
it; messages sent with `lambda-inbox send` (no AWS CLI) are posted exactly once, poison reaches
the DLQ; SIGTERM stops every process the command started, DynamoDB Local included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devkit.paths import CHECKOUT_PYTHONPATH, REPO_ROOT
from lambda_inbox_tools.services.items import scan_plain
from tests.cli_support import answers, cli_in, command, running_local

TEMPLATE = REPO_ROOT / "examples" / "invoices" / "template.yaml"


@pytest.fixture
def running() -> Iterator[tuple[subprocess.Popen[str], dict[str, str], list[str]]]:
    """The command, started as a user starts it; its exports and printed lines once it is up
    (the last of its printed commands but redrive is `lambda-inbox failed`)."""
    stack = f"inv-{uuid.uuid4().hex[:6]}"
    with running_local(TEMPLATE, stack=stack, until="lambda-inbox failed", columns="80") as run:
        assert "AWS_ENDPOINT_URL_SQS" in run.environment, "\n".join(run.lines)
        yield run.process, run.environment, run.lines


def test_another_template_runs_sends_and_stops_on_sigterm(
    running: tuple[subprocess.Popen[str], dict[str, str], list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    process, environment, lines = running
    printed = "\n".join(lines)
    # None of this repository's parameters, no demo, commands for this template's resources.
    assert "unknown template parameter" not in printed and "report" not in printed
    queue = next(line.split()[3] for line in lines if "lambda-inbox send --queue" in line)
    assert queue.endswith("-InvoicesQueue")
    assert any("aws sqs send-message --endpoint-url" in line for line in lines)  # AWS CLI v1

    invoice = {"message_id": "msg-1", "invoice_id": "inv-1", "customer_id": "c-7"}
    bodies = [
        {**invoice, "amount_cents": 1250},
        {**invoice, "amount_cents": 1250},  # redelivered by the producer: same message_id
        {**invoice, "message_id": "msg-2", "amount_cents": 1250},  # the same invoice again
        {"invoice_id": "inv-2"},  # poison: no message_id
    ]
    send = cli_in(capsys, environment)  # the printed exports, as the user's shell has
    for body in bodies:
        sent = send("send", "--queue", queue, "--body", json.dumps(body), "--json")
        assert sent.code == 0, sent.err
        assert sent.json()["message_id"]

    endpoint = environment["AWS_ENDPOINT_URL_DYNAMODB"]
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    ledger = next(name for name in dynamodb.list_tables()["TableNames"] if "LedgerTable" in name)
    sqs = boto3.client(
        "sqs", endpoint_url=environment["AWS_ENDPOINT_URL_SQS"], region_name="us-east-1"
    )
    dlq = sqs.get_queue_url(QueueName=queue.replace("InvoicesQueue", "InvoicesDLQ"))["QueueUrl"]

    def settled() -> tuple[list[dict[str, Any]], int]:
        items = scan_plain(dynamodb, ledger)
        attributes = sqs.get_queue_attributes(
            QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return items, int(attributes["ApproximateNumberOfMessages"])

    deadline = time.monotonic() + 90
    items, dead = settled()
    while time.monotonic() < deadline and not (items and dead == 1):
        time.sleep(1)
        items, dead = settled()
    by_key = {(item["pk"], item["sk"]): item for item in items}
    assert set(by_key) == {("CUSTOMER#c-7", "INVOICE#inv-1"), ("CUSTOMER#c-7", "BALANCE")}
    balance = by_key[("CUSTOMER#c-7", "BALANCE")]
    assert (balance["due_cents"], balance["invoices"]) == (1250, 1)  # once, whatever was sent
    assert dead == 1  # the poison, after maxReceiveCount... or dead-lettered at once

    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0
    for url in (endpoint, environment["AWS_ENDPOINT_URL_SQS"]):
        assert not answers(url), f"{url} still answers after SIGTERM"


def test_a_template_it_cannot_read_is_one_line_and_exit_2(tmp_path: Any) -> None:
    broken = tmp_path / "template.yaml"
    broken.write_text("Resources: [this is: not, a mapping\n")
    done = subprocess.run(
        command("local", "--template", str(broken)),
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": CHECKOUT_PYTHONPATH},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert str(broken) in done.stdout + done.stderr
