"""The kit's DynamoDB failures over the wire, on DynamoDB Local: a batch write's processed part
is what reaches DynamoDB (the request body rewritten at `before-call`), the rest comes back
unprocessed and unwritten; a cancelled transaction writes nothing."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from devkit.tables import create_domain_table
from lambda_inbox_tools.services.offline import local_client
from lambda_inbox_tools.testing import CrashSwitch


def test_dynamodb_failures_on_dynamodb_local(dynamodb_local_endpoint: str) -> None:
    client: Any = local_client("dynamodb", dynamodb_local_endpoint)
    table = f"answers-{uuid.uuid4().hex[:8]}"
    create_domain_table(client, table)

    def item(sk: str) -> dict[str, Any]:
        return {"pk": {"S": "P"}, "sk": {"S": sk}, "data": {"B": b"\x00\xff" + sk.encode()}}

    def stored() -> dict[str, bytes]:
        items = client.scan(TableName=table, ConsistentRead=True)["Items"]
        return {i["sk"]["S"]: i["data"]["B"] for i in items}

    switch = CrashSwitch([client], random.Random(3))
    switch.start()
    switch.arm("dynamodb", 1)
    names = [f"I-{n}" for n in range(8)]
    answer = client.batch_write_item(
        RequestItems={table: [{"PutRequest": {"Item": item(name)}} for name in names]}
    )
    unprocessed = answer["UnprocessedItems"].get(table, [])
    left = {r["PutRequest"]["Item"]["sk"]["S"] for r in unprocessed}
    assert left and stored() == {n: b"\x00\xff" + n.encode() for n in names if n not in left}
    client.batch_write_item(RequestItems=answer["UnprocessedItems"])  # binary values intact
    assert stored() == {n: b"\x00\xff" + n.encode() for n in names}

    switch.arm("dynamodb", 1)
    put = {"Put": {"TableName": table, "Item": item("T")}}
    with pytest.raises(client.exceptions.TransactionCanceledException) as raised:
        client.transact_write_items(TransactItems=[put])
    assert raised.value.response["CancellationReasons"][0]["Code"] in (
        "TransactionConflict",
        "ThrottlingError",
    )
    assert "T" not in stored()
    switch.remove()
