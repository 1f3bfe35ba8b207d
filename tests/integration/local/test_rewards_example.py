"""`lambda-inbox local` on examples/rewards, as its user runs it: purchases put on the Kinesis
stream with `lambda-inbox send --stream` award points once (a producer retry and a redelivery
included), poison reaches the DLQ, the points table's stream keeps the tier counts; with the
inbox table gone a batch is given up (`KinesisBatchInfo`), and once it is back `lambda-inbox
replay` reads it from the stream into the replay queue and it is credited once; SIGTERM stops
every process the command started."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from devkit.paths import REPO_ROOT
from lambda_inbox_tools.local.provision import create_table
from lambda_inbox_tools.local.template import read_stack
from lambda_inbox_tools.services.items import scan_plain
from tests.cli_support import answers, cli_in, running_local

TEMPLATE = REPO_ROOT / "examples" / "rewards" / "template.yaml"


@pytest.fixture
def running() -> Iterator[tuple[subprocess.Popen[str], dict[str, str], str]]:
    """The command, started as a user starts it; its environment with the exports, and its
    stack name."""
    stack = f"rw-{uuid.uuid4().hex[:6]}"
    with running_local(TEMPLATE, stack=stack, until="gave up on, replayed") as run:
        assert "AWS_ENDPOINT_URL_KINESIS" in run.environment, "\n".join(run.lines)
        yield run.process, run.environment, stack


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_the_rewards_example_awards_once_gives_up_replays_and_stops_on_sigterm(
    running: tuple[subprocess.Popen[str], dict[str, str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    process, environment, stack = running
    region = "us-east-1"
    dynamodb = boto3.client(
        "dynamodb", endpoint_url=environment["AWS_ENDPOINT_URL_DYNAMODB"], region_name=region
    )
    sqs = boto3.client("sqs", endpoint_url=environment["AWS_ENDPOINT_URL_SQS"], region_name=region)

    send = cli_in(capsys, environment)  # the printed exports, as the user's shell has

    def put(body: dict[str, Any] | str) -> None:
        text = body if isinstance(body, str) else json.dumps(body)
        done = send("send", "--stream", f"{stack}-PurchasesStream", "--key", "C-1", "--body", text)
        assert done.code == 0, done.err

    def points() -> dict[tuple[str, str], int]:
        items = scan_plain(dynamodb, f"{stack}-PointsTable")
        return {(i["pk"], i["sk"]): int(i["points"]) for i in items}

    def tiers() -> dict[str, int]:
        items = scan_plain(dynamodb, f"{stack}-TiersTable")
        return {i["sk"]: int(i["customers"]) for i in items if int(i["customers"])}

    def depth(queue: str) -> int:
        url = sqs.get_queue_url(QueueName=f"{stack}-{queue}")["QueueUrl"]
        attributes = sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return sum(int(value) for value in attributes.values())

    purchase = {"customer_id": "C-1", "amount_cents": 6000}
    put({"event_id": "P-1", **purchase})
    put({"event_id": "P-1", **purchase})  # the producer's retry: a new sequence number
    put({"event_id": "P-2", **purchase})
    put("not json")  # poison: to the DLQ with its bytes, and the shard goes on
    wait_for(lambda: points().get(("CUSTOMER#C-1", "POINTS")) == 120, "P-1 and P-2 awarded")
    wait_for(lambda: tiers() == {"TIER#silver": 1}, "the tier projection")
    wait_for(lambda: depth("RewardsDLQ") == 1, "the poison in the DLQ")

    # The inbox table gone (a bad deploy): P-3 cannot commit, and its batch is given up.
    inbox = read_stack(TEMPLATE, stack_name=stack).table("InboxTable")
    dynamodb.delete_table(TableName=inbox.name)
    put({"event_id": "P-3", **purchase})
    wait_for(lambda: depth("PurchaseFailuresQueue") == 1, "the KinesisBatchInfo record", 120)
    assert points()[("CUSTOMER#C-1", "POINTS")] == 120

    create_table(dynamodb, inbox)  # the fix deployed; then the replay
    replayed = send(
        "replay",
        "--from", f"{stack}-PurchaseFailuresQueue",
        "--to", f"{stack}-PurchaseReplayQueue",
    )  # fmt: skip
    assert replayed.code == 0, replayed.out + replayed.err
    assert "1 replayed" in replayed.out and "sent 1 message" in replayed.out
    wait_for(lambda: points().get(("CUSTOMER#C-1", "POINTS")) == 180, "P-3 credited by replay")
    wait_for(lambda: tiers() == {"TIER#silver": 1}, "the tiers after the replay")
    assert sorted(k[1] for k in points()) == [
        "POINTS",
        "PURCHASE#P-1",
        "PURCHASE#P-2",
        "PURCHASE#P-3",
    ]

    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0
    for url in (environment["AWS_ENDPOINT_URL_DYNAMODB"], environment["AWS_ENDPOINT_URL_SQS"]):
        assert not answers(url), f"{url} still answers after SIGTERM"
