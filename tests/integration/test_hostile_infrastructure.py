"""Hostile infrastructure on loopback: a DynamoDB endpoint that accepts connections and never
answers, resets them, or answers a byte at a time. The handler answers before the Lambda
deadline, for function timeouts from 3 s up, and reports every record for redelivery."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from devkit.events import sqs_event, sqs_record
from devkit.tables import LocalTables
from lambda_inbox import Clients, InboxConfig, InboxConsumer, UnitOfWork
from lambda_inbox_tools.services.offline import local_client
from lambda_inbox_tools.testing.context import FakeLambdaContext


def _serve(server: socket.socket, mode: str, stop: threading.Event) -> None:
    held: list[socket.socket] = []
    server.settimeout(0.2)
    while not stop.is_set():
        try:
            connection, _ = server.accept()
        except TimeoutError:
            continue
        if mode == "reset":
            connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            connection.close()
        elif mode == "slow":
            threading.Thread(target=_drip, args=(connection, stop), daemon=True).start()
        else:
            held.append(connection)  # "hang": accept, read nothing, answer nothing
    for connection in held:
        connection.close()


def _drip(connection: socket.socket, stop: threading.Event) -> None:
    try:
        for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\n":
            if stop.wait(0.5):
                return
            connection.sendall(bytes([byte]))
    except OSError:
        pass
    finally:
        connection.close()


@pytest.fixture(params=["hang", "reset", "slow"])
def hostile_endpoint(request: pytest.FixtureRequest) -> Iterator[str]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(server, request.param, stop), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(2)
    server.close()


def put_item(body: dict[str, str], uow: UnitOfWork) -> None:
    uow.put("domain", {"pk": f"ITEM#{body['id']}", "sk": "V"})


@pytest.mark.integration
@pytest.mark.parametrize("timeout", [3, 8])
def test_a_hostile_dynamodb_endpoint_cannot_hold_the_function_past_its_deadline(
    hostile_endpoint: str, timeout: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The consumer makes its own client (its own timeouts and retries), pointed at the endpoint.
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", hostile_endpoint)
    inbox = InboxConsumer(
        "hostile-infra",
        model=dict,
        decide=put_item,
        key="id",
        config=InboxConfig("hostile-infra", "inbox"),
    )
    records = [sqs_record(json.dumps({"id": f"r-{n}"})) for n in range(5)]
    started = time.monotonic()
    response = inbox.handle(sqs_event(*records), FakeLambdaContext(timeout * 1000))
    elapsed = time.monotonic() - started
    assert elapsed < timeout - 0.1, elapsed
    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == {
        r["messageId"] for r in records
    }


@pytest.mark.integration
def test_a_hostile_dead_letter_queue_is_reported_in_time_and_nothing_is_lost(
    local_tables: LocalTables, hostile_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", hostile_endpoint)  # the consumer's own client
    inbox = InboxConsumer(
        "hostile-dlq",
        model=dict,
        decide=lambda body, uow: uow.put(
            local_tables.domain, {"pk": f"ITEM#{body['id']}", "sk": "V"}
        ),
        key="id",
        config=InboxConfig("hostile-dlq", local_tables.inbox, f"{hostile_endpoint}/q/dlq"),
        clients=Clients(
            dynamodb=local_client("dynamodb", local_tables.endpoint),
        ),
    )
    good = sqs_record(json.dumps({"id": "good"}))
    poison = sqs_record("not json")
    started = time.monotonic()
    response = inbox.handle(sqs_event(good, poison), FakeLambdaContext(3_000))
    assert time.monotonic() - started < 2.9
    reported = {failure["itemIdentifier"] for failure in response["batchItemFailures"]}
    assert poison["messageId"] in reported  # never acknowledged without reaching the DLQ
    item = local_tables.client.get_item(
        TableName=local_tables.domain, Key={"pk": {"S": "ITEM#good"}, "sk": {"S": "V"}}
    )
    assert "Item" in item or good["messageId"] in reported  # committed, or redelivered
