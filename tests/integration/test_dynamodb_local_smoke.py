"""DynamoDB Local is the real engine: idempotent transactions, conditions, TTL, sparse GSI."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from devkit.tables import OPEN_RECORDS_INDEX, TTL_ATTRIBUTE, LocalTables
from lambda_inbox_tools.services.dynamodb_local import QUICK_START

pytestmark = pytest.mark.integration


def _transact(tables: LocalTables, message_key: str, token: str) -> None:
    tables.client.transact_write_items(
        ClientRequestToken=token,
        TransactItems=[
            {
                "Put": {
                    "TableName": tables.inbox,
                    "Item": {
                        "pk": {"S": f"smoke#{message_key}"},
                        "status": {"S": "COMPLETED"},
                        "expires_at": {"N": "4102444800"},
                    },
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {
                "Update": {
                    "TableName": tables.domain,
                    "Key": {"pk": {"S": "COUNTER#smoke"}, "sk": {"S": "TOTAL"}},
                    "UpdateExpression": "ADD #n :one",
                    "ExpressionAttributeNames": {"#n": "count"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            },
        ],
    )


def _count(tables: LocalTables) -> int:
    item = tables.client.get_item(
        TableName=tables.domain,
        Key={"pk": {"S": "COUNTER#smoke"}, "sk": {"S": "TOTAL"}},
        ConsistentRead=True,
    )["Item"]
    return int(item["count"]["N"])


def test_client_request_token_makes_a_retried_transaction_idempotent(
    local_tables: LocalTables,
) -> None:
    token = uuid.uuid4().hex
    _transact(local_tables, "m-1", token)
    # The same request again (a client retry): accepted, and no effect is applied twice.
    _transact(local_tables, "m-1", token)
    assert _count(local_tables) == 1

    # A new delivery of the same message (new token) loses on the inbox condition.
    with pytest.raises(ClientError) as info:
        _transact(local_tables, "m-1", uuid.uuid4().hex)
    assert info.value.response["Error"]["Code"] == "TransactionCanceledException"
    reasons = [r.get("Code") for r in info.value.response.get("CancellationReasons", [])]
    assert reasons == ["ConditionalCheckFailed", "None"]
    assert _count(local_tables) == 1


def test_inbox_table_has_ttl_and_sparse_open_records_index(local_tables: LocalTables) -> None:
    ttl = local_tables.client.describe_time_to_live(TableName=local_tables.inbox)
    assert ttl["TimeToLiveDescription"]["AttributeName"] == TTL_ATTRIBUTE
    table = local_tables.client.describe_table(TableName=local_tables.inbox)["Table"]
    assert [k["AttributeName"] for k in table["KeySchema"]] == ["pk"]
    assert [i["IndexName"] for i in table["GlobalSecondaryIndexes"]] == [OPEN_RECORDS_INDEX]

    # Only items carrying the GSI keys (open records) appear in the index.
    local_tables.client.put_item(
        TableName=local_tables.inbox, Item={"pk": {"S": "c#done"}, "status": {"S": "COMPLETED"}}
    )
    local_tables.client.put_item(
        TableName=local_tables.inbox,
        Item={
            "pk": {"S": "c#open"},
            "status": {"S": "FAILED"},
            "gsi_open_pk": {"S": "OPEN#0"},
            "gsi_open_sk": {"S": "2030-01-01T00:00:00Z#c#open"},
        },
    )
    found = local_tables.client.query(
        TableName=local_tables.inbox,
        IndexName=OPEN_RECORDS_INDEX,
        KeyConditionExpression="gsi_open_pk = :p",
        ExpressionAttributeValues={":p": {"S": "OPEN#0"}},
    )["Items"]
    assert [i["pk"]["S"] for i in found] == ["c#open"]


def _java_command_line(port: str) -> list[str]:
    """The command line of the DynamoDB Local process serving `port` (Linux /proc)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode().split("\0")
        except OSError:  # the process ended while it was read
            continue
        if "DynamoDBLocal.jar" in argv and argv[argv.index("-port") + 1] == port:
            return argv
    raise AssertionError(f"no DynamoDB Local process serves port {port}")


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads Linux's /proc")
def test_the_suites_dynamodb_local_runs_with_the_quick_start_jvm_options(
    dynamodb_local_endpoint: str,
) -> None:
    argv = _java_command_line(dynamodb_local_endpoint.rsplit(":", 1)[1])
    assert argv[1 : 1 + len(QUICK_START)] == list(QUICK_START)
    assert argv.index("-jar") > len(QUICK_START)
