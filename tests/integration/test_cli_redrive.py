"""`lambda-inbox redrive` against SQS on a moto server, through the command line.

moto has no StartMessageMoveTask, so every run here also shows the fallback to the client-side
mover. Killing the mover mid-way (SIGKILL between any two calls, or Ctrl-C / SIGTERM) and
running it again loses nothing: every message ends in the destination, at most the messages of
the batch in flight twice.
"""

from __future__ import annotations

import base64
import collections
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from tests.cli_support import Cli, start_process

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType
    from mypy_boto3_sqs.type_defs import MessageTypeDef


def _sqs(endpoint: str) -> SQSClient:
    return boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")


@dataclass
class Queues:
    endpoint: str
    sqs: SQSClient
    names: list[str]

    def create(self, name: str, *, fifo: bool = False, max_size: int | None = None) -> str:
        unique = f"{name}-{uuid.uuid4().hex[:10]}" + (".fifo" if fifo else "")
        attributes: dict[QueueAttributeNameType, str] = {}
        if fifo:
            attributes["FifoQueue"] = "true"
        if max_size is not None:
            attributes["MaximumMessageSize"] = str(max_size)
        self.names.append(unique)
        return self.sqs.create_queue(QueueName=unique, Attributes=attributes)["QueueUrl"]

    def send(
        self, url: str, body: str, attributes: dict[str, Any] | None = None, **extra: str
    ) -> str:
        request: dict[str, Any] = {"QueueUrl": url, "MessageBody": body, **extra}
        if attributes:
            request["MessageAttributes"] = attributes
        return self.sqs.send_message(**request)["MessageId"]

    def depth(self, url: str) -> tuple[int, int]:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return (
            int(attributes["ApproximateNumberOfMessages"]),
            int(attributes["ApproximateNumberOfMessagesNotVisible"]),
        )

    def drain(self, url: str) -> list[MessageTypeDef]:
        """Every visible message, in receive order, deleted once received."""
        messages: list[MessageTypeDef] = []
        while True:
            batch = self.sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                MessageAttributeNames=["All"],
                AttributeNames=["All"],
                VisibilityTimeout=60,
                WaitTimeSeconds=0,
            ).get("Messages", [])
            if not batch:
                return messages
            messages.extend(batch)
            self.sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(n), "ReceiptHandle": message["ReceiptHandle"]}
                    for n, message in enumerate(batch)
                ],
            )


@pytest.fixture
def queues(moto_server_endpoint: str) -> Iterator[Queues]:
    sqs = _sqs(moto_server_endpoint)
    made = Queues(moto_server_endpoint, sqs, [])
    yield made
    for name in made.names:
        sqs.delete_queue(QueueUrl=sqs.get_queue_url(QueueName=name)["QueueUrl"])


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys)


def _string(value: str) -> dict[str, str]:
    return {"DataType": "String", "StringValue": value}


def _dead_letter(n: int, code: str = "invalid_payload") -> dict[str, Any]:
    return {
        "inbox-error-code": _string(code),
        "inbox-error": _string(f"reason {n}"),
        "inbox-message-key": _string(f"evt-{n:03d}"),
    }


def _name(url: str) -> str:
    return url.rsplit("/", 1)[-1]


def _attributes(message: MessageTypeDef) -> dict[str, tuple[str, Any]]:
    return {
        name: (value["DataType"], value.get("StringValue", value.get("BinaryValue")))
        for name, value in message.get("MessageAttributes", {}).items()
    }


def test_redrive_moves_bodies_and_attributes_unchanged(cli: Cli, queues: Queues) -> None:
    dlq = queues.create("orders-dlq")
    target = queues.create("orders")
    binary_value = bytes(range(256))
    sent: list[tuple[str, dict[str, tuple[str, Any]]]] = []
    for n in range(12):
        attributes = {
            **_dead_letter(n),
            "amount": {"DataType": "Number", "StringValue": str(n * 100)},
            "trace": {"DataType": "Binary", "BinaryValue": bytes([n, 0, 255])},
            "tenant": {"DataType": "String.tenant-id", "StringValue": "t-1"},
        }
        body = f'{{"event_id": "evt-{n:03d}", "note": "ünïcødé ✓"}}'
        queues.send(dlq, body, attributes)
        sent.append((body, _attributes({"MessageAttributes": attributes})))
    # A binary Kafka value, dead-lettered base64-encoded with inbox-body-encoding.
    encoded = base64.b64encode(binary_value).decode()
    attributes = {**_dead_letter(99), "inbox-body-encoding": _string("base64")}
    queues.send(dlq, encoded, attributes)
    sent.append((encoded, _attributes({"MessageAttributes": attributes})))

    run = cli(
        "redrive", "--from", _name(dlq), "--to", target, "--endpoint-url", queues.endpoint, "--json"
    )

    assert run.code == 0, run.err
    report = run.json()
    assert (report["moved"], report["skipped"], report["failed"]) == (13, 0, 0)
    assert report["mode"] == "client"
    assert "message move task is not available here" in run.err
    assert queues.depth(dlq) == (0, 0)
    moved = queues.drain(target)
    assert sorted((m["Body"], sorted(_attributes(m).items())) for m in moved) == sorted(
        (body, sorted(attrs.items())) for body, attrs in sent
    )
    replayed = next(m for m in moved if m["Body"] == encoded)
    assert base64.b64decode(replayed["Body"]) == binary_value
    assert replayed["MessageAttributes"]["inbox-body-encoding"]["StringValue"] == "base64"


def test_where_moves_only_matching_messages_and_releases_the_others(
    cli: Cli, queues: Queues
) -> None:
    dlq = queues.create("orders-dlq")
    target = queues.create("orders")
    for n in range(15):
        code = "invalid_payload" if n % 3 == 0 else "condition_failed"
        queues.send(dlq, f"body-{n}", _dead_letter(n, code))

    run = cli(
        "redrive",
        "--from",
        dlq,
        "--to",
        target,
        "--where",
        "inbox-error-code=invalid_payload",
        "--endpoint-url",
        queues.endpoint,
        "--json",
    )

    assert run.code == 0, run.err
    assert (run.json()["moved"], run.json()["skipped"]) == (5, 10)
    assert queues.depth(dlq) == (10, 0)  # visible again at once
    moved = queues.drain(target)
    assert sorted(m["Body"] for m in moved) == sorted(f"body-{n}" for n in range(0, 15, 3))
    assert {m["MessageAttributes"]["inbox-error-code"]["StringValue"] for m in moved} == {
        "invalid_payload"
    }

    # Several --where are ANDed.
    run = cli(
        "redrive",
        "--from",
        dlq,
        "--to",
        target,
        "--where",
        "inbox-error-code=condition_failed",
        "--where",
        "inbox-message-key=evt-004",
        "--endpoint-url",
        queues.endpoint,
    )
    assert run.code == 0, run.err
    assert "moved 1, skipped 9, failed 0" in run.out
    assert [m["Body"] for m in queues.drain(target)] == ["body-4"]


def test_limit_moves_at_most_n(cli: Cli, queues: Queues) -> None:
    dlq = queues.create("orders-dlq")
    target = queues.create("orders")
    for n in range(12):
        queues.send(dlq, f"body-{n}", _dead_letter(n))
    arn = f"arn:aws:sqs:us-east-1:123456789012:{_name(dlq)}"

    run = cli(
        "redrive",
        "--from",
        arn,
        "--to",
        _name(target),
        "--limit",
        "5",
        "--endpoint-url",
        queues.endpoint,
    )

    assert run.code == 0, run.err
    assert "moved 5, skipped 0, failed 0" in run.out
    assert queues.depth(target) == (5, 0)
    assert queues.depth(dlq) == (7, 0)


def test_dry_run_moves_nothing_and_lists_what_would_move(cli: Cli, queues: Queues) -> None:
    dlq = queues.create("orders-dlq")
    target = queues.create("orders")
    ids = [queues.send(dlq, f'{{"event_id": "evt-{n:03d}"}}', _dead_letter(n)) for n in range(6)]
    queues.send(dlq, "other", _dead_letter(7, "condition_failed"))

    run = cli(
        "redrive",
        "--from",
        dlq,
        "--to",
        target,
        "--where",
        "inbox-error-code=invalid_payload",
        "--dry-run",
        "--endpoint-url",
        queues.endpoint,
        "--json",
    )

    assert run.code == 0, run.err
    report = run.json()
    assert report["dry_run"] is True
    assert (report["moved"], report["skipped"]) == (0, 1)
    assert sorted(row["message_id"] for row in report["would_move"]) == sorted(ids)
    first = next(row for row in report["would_move"] if row["message_id"] == ids[0])
    assert first == {
        "message_id": ids[0],
        "inbox-error-code": "invalid_payload",
        "inbox-message-key": "evt-000",
        "body_preview": '{"event_id": "evt-000"}',
    }
    assert queues.depth(target) == (0, 0)
    assert queues.depth(dlq) == (7, 0)  # all visible again at once

    text = cli(
        "redrive", "--from", dlq, "--to", target, "--dry-run", "--endpoint-url", queues.endpoint
    )
    assert text.code == 0
    assert ids[0] in text.out
    assert "evt-000" in text.out
    assert "would move 7" in text.out and "nothing was moved" in text.out


def test_fifo_group_and_deduplication_ids_are_kept(cli: Cli, queues: Queues) -> None:
    dlq = queues.create("orders-dlq", fifo=True)
    target = queues.create("orders", fifo=True)
    for n in range(8):
        group = f"customer-{n % 2}"
        queues.send(
            dlq,
            f"{group}/{n}",
            _dead_letter(n),
            MessageGroupId=group,
            MessageDeduplicationId=f"dedup-{n}",
        )

    run = cli("redrive", "--from", dlq, "--to", target, "--endpoint-url", queues.endpoint, "--json")

    assert run.code == 0, run.err
    assert run.json()["moved"] == 8
    moved = queues.drain(target)
    assert {
        (m["Body"], m["Attributes"]["MessageGroupId"], m["Attributes"]["MessageDeduplicationId"])
        for m in moved
    } == {(f"customer-{n % 2}/{n}", f"customer-{n % 2}", f"dedup-{n}") for n in range(8)}
    for group in ("customer-0", "customer-1"):  # order within a group is kept
        bodies = [m["Body"] for m in moved if m["Attributes"]["MessageGroupId"] == group]
        assert bodies == sorted(bodies, key=lambda body: int(body.rsplit("/", 1)[1]))


def test_a_message_the_destination_refuses_stays_in_the_source(cli: Cli, queues: Queues) -> None:
    dlq = queues.create("orders-dlq")
    target = queues.create("orders", max_size=1024)
    for n in range(3):
        queues.send(dlq, f"small-{n}", _dead_letter(n))
    queues.send(dlq, "x" * 2000, _dead_letter(9))

    run = cli("redrive", "--from", dlq, "--to", target, "--endpoint-url", queues.endpoint, "--json")

    assert run.code == 1
    report = run.json()
    assert (report["moved"], report["failed"]) == (3, 1)
    assert "send refused" in run.err
    assert sorted(m["Body"] for m in queues.drain(target)) == ["small-0", "small-1", "small-2"]
    assert [m["Body"] for m in queues.drain(dlq)] == ["x" * 2000]


def _wait_for(predicate: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_stopped_mid_way_and_run_again_nothing_is_lost(
    cli: Cli, queues: Queues, stop: signal.Signals
) -> None:
    dlq = queues.create("orders-dlq")
    target = queues.create("orders")
    bodies = [f"body-{n:02d}" for n in range(20)]
    for n, body in enumerate(bodies):
        queues.send(dlq, body, _dead_letter(n))
    visibility = 5

    mover = start_process(
        "redrive",
        "--from",
        dlq,
        "--to",
        target,
        "--rate",
        "2",
        "--visibility-timeout",
        str(visibility),
        "--endpoint-url",
        queues.endpoint,
    )
    try:
        _wait_for(lambda: mover.poll() is not None or queues.depth(target)[0] >= 6, timeout=60)
        assert mover.poll() is None, mover.communicate()
        mover.send_signal(stop)
        _, err = mover.communicate(timeout=30)
    finally:
        if mover.poll() is None:
            mover.kill()
            mover.communicate()
    if stop == signal.SIGKILL:
        assert mover.returncode == -signal.SIGKILL
        # Messages it had received stay hidden until their visibility timeout ends.
        time.sleep(visibility + 1)
    else:
        assert mover.returncode == 1, err
        assert "interrupted" in err
    assert queues.depth(target)[0] < len(bodies)

    run = cli("redrive", "--from", dlq, "--to", target, "--endpoint-url", queues.endpoint)

    assert run.code == 0, run.err
    assert queues.depth(dlq) == (0, 0)
    arrived = collections.Counter(m["Body"] for m in queues.drain(target))
    assert set(arrived) == set(bodies)
    # At most the batch in flight (2 messages at --rate 2) arrives twice.
    assert sum(arrived.values()) - len(bodies) <= 2
