"""`lambda-inbox`: look into an inbox table from a terminal.

    lambda-inbox show   --table T --consumer C KEY     one record, as stored
    lambda-inbox failed --table T --consumer C         FAILED records, newest first
    lambda-inbox create-table --table T                an inbox table (local stacks, tests)

The endpoint follows boto3's usual settings (`AWS_ENDPOINT_URL_DYNAMODB`, profile, region) or
`--endpoint-url`.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .store import Status, open_records
from .unit_of_work import deserialize_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lambda-inbox", description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint-url", help="DynamoDB endpoint (default: boto3 settings)")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print one inbox record")
    show.add_argument("key", help="the message key (e.g. the event_id)")
    failed = commands.add_parser("failed", help="list FAILED records of a consumer")
    failed.add_argument("--limit", type=int, default=50)
    for command in (show, failed):
        command.add_argument("--table", required=True, help="inbox table name")
        command.add_argument("--consumer", required=True, help="consumer name, e.g. order-events")
    create = commands.add_parser("create-table", help="create an inbox table")
    create.add_argument("--table", required=True)
    args = parser.parse_args(argv)

    import boto3

    client: DynamoDBClient = boto3.client("dynamodb", endpoint_url=args.endpoint_url)
    if args.command == "show":
        return _show(client, args.table, f"{args.consumer}#{args.key}")
    if args.command == "failed":
        return _failed(client, args.table, args.consumer, args.limit)
    from .tables import create_inbox_table

    create_inbox_table(client, args.table)
    print(f"created {args.table}")
    return 0


def _show(client: DynamoDBClient, table: str, pk: str) -> int:
    item = client.get_item(TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True).get("Item")
    if item is None:
        print(f"no record {pk!r} in {table}", file=sys.stderr)
        return 1
    print(json.dumps(_plain(deserialize_item(item)), indent=2, sort_keys=True))
    return 0


def _failed(client: DynamoDBClient, table: str, consumer: str, limit: int) -> int:
    records = open_records(client, table, statuses=(Status.FAILED,), consumer=consumer)
    for record in itertools.islice(records, limit):
        print(
            f"{record.failed_at or '?'}  {record.message_key}  "
            f"{record.error_code}  {(record.last_error or '')[:120]}"
        )
    return 0


def _plain(value: Any) -> Any:
    """DynamoDB types -> JSON: Decimal to int/float, bytes to text (or base64)."""
    if isinstance(value, dict):
        return {key: _plain(inner) for key, inner in value.items()}
    if isinstance(value, (list, set, tuple)):
        return [_plain(inner) for inner in value]
    if hasattr(value, "value"):  # boto3 Binary
        value = bytes(value.value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(value).decode("ascii")
    if type(value).__name__ == "Decimal":
        return int(value) if value == value.to_integral_value() else float(value)
    return value


if __name__ == "__main__":
    raise SystemExit(main())
