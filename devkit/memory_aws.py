"""DynamoDB tables and SQS queues in memory, answering real boto3 clients: for tests that make
thousands of calls (property-based fuzzing), where moto's per-call cost dominates.

`MemoryAws().client("dynamodb" | "sqs")` is an ordinary botocore client: the caller's parameters
go through botocore's own validation and serialization, the hooks of `devkit.limits` (always
registered: whatever SQS or DynamoDB would refuse is refused), and any hook the caller registers;
only the sending is replaced. A `before-call` hook answers from memory, in the parsed shape
botocore returns, and errors are botocore's modelled exceptions (`ConditionalCheckFailedException`,
`TransactionCanceledException` with `CancellationReasons`, `ValidationException`).

What it answers, and how far:

- DynamoDB: `CreateTable` / `DescribeTable` / `DeleteTable` / `UpdateTimeToLive` (key schema
  only; indexes and TTL accepted and ignored), `GetItem`, `PutItem`, `DeleteItem` (with
  `ConditionExpression`), `BatchGetItem` (top-level `ProjectionExpression`), `Scan` (one page, no
  filter) and `TransactWriteItems` (`Put`, `Delete`, `ConditionCheck`; all or nothing, one action
  per item, at most 100). Condition expressions: `attribute_exists`, `attribute_not_exists`,
  `=`, `<>`, `<`, `<=`, `>`, `>=` on top-level attributes, `AND`, `OR`, `NOT`, parentheses.
  Refused as DynamoDB refuses them: items beyond 400 KB, missing or empty key attributes, text
  that is not UTF-8. `UpdateItem` / `Update` and anything else raise `NotImplementedError`: use
  moto or DynamoDB Local for them. Reads are always consistent; `ClientRequestToken` is ignored.
- SQS: `CreateQueue`, `SendMessage`, `SendMessageBatch`, `ReceiveMessage`, `DeleteMessage`,
  `DeleteMessageBatch`, `GetQueueAttributes` (message counts). FIFO queues (name ending in
  `.fifo`) need a group id and a deduplication id, and drop a message whose deduplication id was
  seen in the last 5 minutes, as SQS does. A received message stays invisible until deleted,
  unless received with `VisibilityTimeout=0`.
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

import boto3
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ParamValidationError
from botocore.hooks import first_non_none_response
from botocore.validate import ParamValidator

from devkit.limits import enforce_dynamodb_key_limits, enforce_sqs_limits
from lambda_inbox_tools.services.offline import ACCOUNT, REGION

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

#: DynamoDB: the largest item, in bytes (attribute names and values).
MAX_ITEM_BYTES = 400 * 1024
#: DynamoDB: actions per TransactWriteItems; keys per BatchGetItem.
MAX_TRANSACTION_ACTIONS = 100
MAX_BATCH_GET_KEYS = 100
#: SQS: how long a FIFO queue remembers a deduplication id, in seconds.
FIFO_DEDUPLICATION_SECONDS = 300

_PARAMS = "memory_aws_params"
Item = dict[str, Any]


class MemoryAwsError(Exception):
    """An error answer: the service's error code and message (botocore raises its class)."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.extra = extra


def _validation(message: str) -> MemoryAwsError:
    return MemoryAwsError("ValidationException", message)


# ---- attribute values ---------------------------------------------------------------------------


def _value_size(value: Mapping[str, Any]) -> int:
    """DynamoDB's size of an attribute value, in bytes."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(str(inner).encode("utf-8", "surrogatepass"))
    if kind == "N":
        digits = str(inner).lstrip("-").replace(".", "").lstrip("0")
        return len(digits) // 2 + 2
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode("utf-8", "surrogatepass")) for s in inner)
    if kind == "NS":
        return sum(_value_size({"N": n}) for n in inner)
    if kind == "BS":
        return sum(len(b) for b in inner)
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in inner)
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + _value_size(v) + 1 for k, v in inner.items())
    raise _validation(f"unknown attribute value type {kind}")


def item_size(item: Mapping[str, Any]) -> int:
    """DynamoDB's size of an item: attribute names and values, in bytes."""
    return sum(
        len(name.encode("utf-8", "surrogatepass")) + _value_size(value)
        for name, value in item.items()
    )


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for name, inner in value.items():
            yield str(name)
            yield from _texts(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _texts(inner)


def _check_item(item: Mapping[str, Any]) -> None:
    for text in _texts(item):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise _validation("a string is not valid UTF-8") from None
    size = item_size(item)
    if size > MAX_ITEM_BYTES:
        raise _validation(f"Item size has exceeded the maximum allowed size ({size} bytes)")


def _comparable(value: Mapping[str, Any] | None) -> tuple[str, Any] | None:
    if value is None:
        return None
    ((kind, inner),) = value.items()
    if kind == "N":
        from decimal import Decimal

        return kind, Decimal(str(inner))
    if kind == "S":
        return kind, str(inner).encode("utf-8", "surrogatepass")
    return kind, inner


# ---- condition expressions ----------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(<>|<=|>=|=|<|>|\(|\)|,|[#:]?[A-Za-z0-9_.\-]+)")
_COMPARISONS = ("=", "<>", "<", "<=", ">", ">=")


@dataclass
class _Condition:
    """A parsed ConditionExpression, evaluated against an item (None: no item)."""

    tokens: list[str]
    names: Mapping[str, str]
    values: Mapping[str, Any]
    position: int = 0

    @classmethod
    def parse(
        cls, expression: str, names: Mapping[str, str], values: Mapping[str, Any]
    ) -> Callable[[Item | None], bool]:
        tokens: list[str] = []
        rest = expression.strip()
        while rest:
            match = _TOKEN.match(rest)
            if match is None:
                raise _validation(f"Invalid ConditionExpression: {expression!r}")
            tokens.append(match.group(1))
            rest = rest[match.end() :].strip()
        parser = cls(tokens, names, values)
        evaluate = parser._or()
        if parser.position != len(tokens):
            raise _validation(f"Invalid ConditionExpression: {expression!r}")
        return evaluate

    def _peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self, expected: str | None = None) -> str:
        token = self._peek()
        if token is None or (expected is not None and token.upper() != expected):
            raise _validation(f"Invalid ConditionExpression near {token!r}")
        self.position += 1
        return token

    def _or(self) -> Callable[[Item | None], bool]:
        parts = [self._and()]
        while (self._peek() or "").upper() == "OR":
            self._take()
            parts.append(self._and())
        return lambda item: any(part(item) for part in parts)

    def _and(self) -> Callable[[Item | None], bool]:
        parts = [self._not()]
        while (self._peek() or "").upper() == "AND":
            self._take()
            parts.append(self._not())
        return lambda item: all(part(item) for part in parts)

    def _not(self) -> Callable[[Item | None], bool]:
        if (self._peek() or "").upper() == "NOT":
            self._take()
            inner = self._not()
            return lambda item: not inner(item)
        return self._primary()

    def _primary(self) -> Callable[[Item | None], bool]:
        token = self._take()
        if token == "(":
            inner = self._or()
            self._take(")")
            return inner
        if token in ("attribute_exists", "attribute_not_exists"):
            self._take("(")
            name = self._name(self._take())
            self._take(")")
            if token == "attribute_exists":
                return lambda item: item is not None and name in item
            return lambda item: item is None or name not in item
        left = self._operand(token)
        operator = self._take()
        if operator not in _COMPARISONS:
            raise NotImplementedError(f"memory DynamoDB: condition operator {operator!r}")
        right = self._operand(self._take())

        def compare(item: Item | None) -> bool:
            a, b = _comparable(left(item)), _comparable(right(item))
            if operator == "<>":  # moto's reading: a missing attribute differs from any value
                return a != b
            if a is None or b is None or a[0] != b[0]:
                return False
            if operator == "=":
                return bool(a[1] == b[1])
            if a[0] not in ("N", "S", "B"):
                raise _validation(f"cannot order values of type {a[0]}")
            ordered: bool = {
                "<": a[1] < b[1],
                "<=": a[1] <= b[1],
                ">": a[1] > b[1],
                ">=": a[1] >= b[1],
            }[operator]
            return ordered

        return compare

    def _name(self, token: str) -> str:
        if token.startswith("#"):
            if token not in self.names:
                raise _validation(f"undefined attribute name {token}")
            return self.names[token]
        if "." in token:
            raise NotImplementedError(f"memory DynamoDB: nested path {token!r}")
        return token

    def _operand(self, token: str) -> Callable[[Item | None], Mapping[str, Any] | None]:
        if token.startswith(":"):
            if token not in self.values:
                raise _validation(f"undefined attribute value {token}")
            value: Mapping[str, Any] = self.values[token]
            return lambda _: value
        name = self._name(token)
        return lambda item: None if item is None else item.get(name)


def _condition_holds(request: Mapping[str, Any], current: Item | None) -> bool:
    expression = request.get("ConditionExpression")
    if expression is None:
        return True
    evaluate = _Condition.parse(
        expression,
        request.get("ExpressionAttributeNames") or {},
        request.get("ExpressionAttributeValues") or {},
    )
    return evaluate(current)


# ---- tables ---------------------------------------------------------------------------------


@dataclass
class MemoryTable:
    name: str
    key_names: tuple[str, ...]
    key_types: tuple[str, ...]
    items: dict[tuple[Any, ...], Item] = field(default_factory=dict)

    def key_of(self, item: Mapping[str, Any], *, what: str = "item") -> tuple[Any, ...]:
        key: list[Any] = []
        for name, kind in zip(self.key_names, self.key_types, strict=True):
            value = item.get(name)
            if not isinstance(value, Mapping) or set(value) != {kind}:
                raise _validation(
                    f"One or more parameter values were invalid: Missing the key {name} "
                    f"(type {kind}) in the {what}"
                )
            inner = value[kind]
            if inner in ("", b""):
                raise _validation(
                    "One or more parameter values are not valid. The AttributeValue for a key "
                    f"attribute cannot contain an empty {kind} value. Key: {name}"
                )
            key.append(inner)
        return tuple(key)

    def description(self) -> dict[str, Any]:
        return {
            "TableName": self.name,
            "TableStatus": "ACTIVE",
            "TableArn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{self.name}",
            "KeySchema": [
                {"AttributeName": name, "KeyType": kind}
                for name, kind in zip(self.key_names, ("HASH", "RANGE"), strict=False)
            ],
            "ItemCount": len(self.items),
        }


def _project(item: Item, request: Mapping[str, Any]) -> Item:
    projection = request.get("ProjectionExpression")
    if not projection:
        return dict(item)
    names: Mapping[str, str] = request.get("ExpressionAttributeNames") or {}
    wanted = set()
    for part in projection.split(","):
        token = part.strip()
        if "." in token or "[" in token:
            raise NotImplementedError(f"memory DynamoDB: nested projection {token!r}")
        wanted.add(names.get(token, token))
    return {name: value for name, value in item.items() if name in wanted}


# ---- queues ---------------------------------------------------------------------------------


@dataclass
class MemoryQueue:
    name: str
    url: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    deduplication: dict[str, float] = field(default_factory=dict)

    @property
    def fifo(self) -> bool:
        return self.name.endswith(".fifo")


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _attributes_md5(attributes: Mapping[str, Any]) -> str:
    """SQS's MD5 of message attributes (names sorted, length-prefixed fields)."""
    encoded = b""
    for name in sorted(attributes):
        value = attributes[name]
        data_type = value["DataType"]
        for part in (name.encode("utf-8"), data_type.encode("utf-8")):
            encoded += len(part).to_bytes(4, "big") + part
        if "BinaryValue" in value:
            raw = bytes(value["BinaryValue"])
            encoded += b"\x02" + len(raw).to_bytes(4, "big") + raw
        else:
            raw = str(value["StringValue"]).encode("utf-8")
            encoded += b"\x01" + len(raw).to_bytes(4, "big") + raw
    return _md5(encoded)


# ---- the service ----------------------------------------------------------------------------


class MemoryAws:
    """In-memory DynamoDB tables and SQS queues behind real boto3 clients (see the module)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.tables: dict[str, MemoryTable] = {}
        self.queues: dict[str, MemoryQueue] = {}
        self._clock = clock
        self._session = boto3.session.Session()

    @overload
    def client(self, service: Literal["dynamodb"]) -> DynamoDBClient: ...

    @overload
    def client(self, service: Literal["sqs"]) -> SQSClient: ...

    def client(self, service: Literal["dynamodb", "sqs"]) -> DynamoDBClient | SQSClient:
        """A boto3 client answered from memory, with the limits of `devkit.limits` enforced."""
        real: Any = self._session.client(
            service,
            region_name=REGION,
            endpoint_url=f"https://{service}.memory.invalid",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

        def keep(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            context[_PARAMS] = params

        def respond(
            model: Any, context: dict[str, Any], **_: Any
        ) -> tuple[AWSResponse, dict[str, Any]]:
            return self._respond(service, str(model.name), context[_PARAMS])

        if service == "dynamodb":
            enforce_dynamodb_key_limits(real)
        else:
            enforce_sqs_limits(real)
        real.meta.events.register(f"before-parameter-build.{service}", keep)
        real.meta.events.register(f"before-call.{service}", respond)
        return _MemoryClient(real, self._respond)  # type: ignore[return-value]

    def _respond(
        self, service: str, operation: str, params: dict[str, Any]
    ) -> tuple[AWSResponse, dict[str, Any]]:
        """The HTTP status and the parsed answer botocore would return."""
        answer = self._dynamodb if service == "dynamodb" else self._sqs
        try:
            parsed = answer(operation, params)
        except MemoryAwsError as error:
            body = {"Error": {"Code": error.code, "Message": error.message}, **error.extra}
            return _http(400), {**body, "ResponseMetadata": _metadata(400)}
        return _http(200), {**parsed, "ResponseMetadata": _metadata(200)}

    def create_queue(self, name: str) -> str:
        """Create queue `name` (FIFO when it ends in `.fifo`) and return its URL."""
        url = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
        self.queues.setdefault(url, MemoryQueue(name, url))
        return url

    def drain(self, queue_url: str) -> list[dict[str, Any]]:
        """Every visible message of a queue as ReceiveMessage returns them (all attributes), then
        deleted: what `lambda_inbox_tools.services.queues.receive_all(client, url, delete=True)` reads, without the
        calls."""
        queue = self._queue(queue_url)
        received = self._receive(queue, {"MaxNumberOfMessages": len(queue.messages)})
        messages: list[dict[str, Any]] = received.get("Messages", [])
        taken = {message["ReceiptHandle"] for message in messages}
        queue.messages = [m for m in queue.messages if m["ReceiptHandle"] not in taken]
        return messages

    def clear_items(self) -> None:
        """Empty every table (the tables stay)."""
        for table in self.tables.values():
            table.items.clear()

    # ---- DynamoDB -------------------------------------------------------------------------

    def _table(self, name: object) -> MemoryTable:
        table = self.tables.get(str(name))
        if table is None:
            raise MemoryAwsError("ResourceNotFoundException", "Requested resource not found")
        return table

    def _dynamodb(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if operation == "CreateTable":
            name = params["TableName"]
            if name in self.tables:
                raise MemoryAwsError("ResourceInUseException", f"Table already exists: {name}")
            schema = sorted(params["KeySchema"], key=lambda key: key["KeyType"] != "HASH")
            types = {a["AttributeName"]: a["AttributeType"] for a in params["AttributeDefinitions"]}
            names = tuple(key["AttributeName"] for key in schema)
            table = MemoryTable(name, names, tuple(types[n] for n in names))
            self.tables[name] = table
            return {"TableDescription": table.description()}
        if operation == "DescribeTable":
            return {"Table": self._table(params["TableName"]).description()}
        if operation == "DeleteTable":
            table = self._table(params["TableName"])
            del self.tables[table.name]
            return {"TableDescription": table.description()}
        if operation == "UpdateTimeToLive":
            self._table(params["TableName"])
            return {"TimeToLiveSpecification": params["TimeToLiveSpecification"]}
        if operation == "GetItem":
            table = self._table(params["TableName"])
            item = table.items.get(table.key_of(params["Key"], what="key"))
            return {} if item is None else {"Item": _project(item, params)}
        if operation == "PutItem":
            table = self._table(params["TableName"])
            key = table.key_of(params["Item"])
            _check_item(params["Item"])
            if not _condition_holds(params, table.items.get(key)):
                raise MemoryAwsError(
                    "ConditionalCheckFailedException", "The conditional request failed"
                )
            table.items[key] = dict(params["Item"])
            return {}
        if operation == "DeleteItem":
            table = self._table(params["TableName"])
            key = table.key_of(params["Key"], what="key")
            if not _condition_holds(params, table.items.get(key)):
                raise MemoryAwsError(
                    "ConditionalCheckFailedException", "The conditional request failed"
                )
            table.items.pop(key, None)
            return {}
        if operation == "BatchGetItem":
            return self._batch_get(params["RequestItems"])
        if operation == "Scan":
            if set(params) - {"TableName", "ConsistentRead"}:
                raise NotImplementedError(f"memory DynamoDB: Scan with {sorted(params)}")
            table = self._table(params["TableName"])
            found = [dict(item) for item in table.items.values()]
            return {"Items": found, "Count": len(found), "ScannedCount": len(found)}
        if operation == "TransactWriteItems":
            return self._transact(params["TransactItems"])
        raise NotImplementedError(f"memory DynamoDB does not answer {operation}")

    def _batch_get(self, request: Mapping[str, Any]) -> dict[str, Any]:
        if sum(len(entry["Keys"]) for entry in request.values()) > MAX_BATCH_GET_KEYS:
            raise _validation("Too many items requested for the BatchGetItem call")
        responses: dict[str, list[Item]] = {}
        for name, entry in request.items():
            table = self._table(name)
            keys = [table.key_of(key, what="key") for key in entry["Keys"]]
            if len(set(keys)) != len(keys):
                raise _validation("Provided list of item keys contains duplicates")
            responses[name] = [
                _project(table.items[key], entry) for key in keys if key in table.items
            ]
        return {"Responses": responses, "UnprocessedKeys": {}}

    def _transact(self, actions: list[dict[str, Any]]) -> dict[str, Any]:
        if len(actions) > MAX_TRANSACTION_ACTIONS:
            raise _validation(f"Member must have length less than or equal to 100 ({len(actions)})")
        planned: list[tuple[MemoryTable, tuple[Any, ...], str, Mapping[str, Any]]] = []
        for action in actions:
            ((kind, request),) = action.items()
            table = self._table(request["TableName"])
            if kind == "Put":
                key = table.key_of(request["Item"])
                _check_item(request["Item"])
            elif kind in ("Delete", "ConditionCheck"):
                key = table.key_of(request["Key"], what="key")
            else:
                raise NotImplementedError(f"memory DynamoDB: transaction action {kind}")
            if any(t is table and k == key for t, k, _, _ in planned):
                raise _validation(
                    "Transaction request cannot include multiple operations on one item"
                )
            planned.append((table, key, kind, request))
        reasons: list[dict[str, Any]] = []
        for table, key, _, request in planned:
            current = table.items.get(key)
            if _condition_holds(request, current):
                reasons.append({"Code": "None"})
                continue
            reason: dict[str, Any] = {
                "Code": "ConditionalCheckFailed",
                "Message": "The conditional request failed",
            }
            if request.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                reason["Item"] = dict(current)
            reasons.append(reason)
        if any(reason["Code"] != "None" for reason in reasons):
            codes = ", ".join(reason["Code"] for reason in reasons)
            raise MemoryAwsError(
                "TransactionCanceledException",
                f"Transaction cancelled, please refer cancellation reasons for specific reasons "
                f"[{codes}]",
                CancellationReasons=reasons,
            )
        for table, key, kind, request in planned:
            if kind == "Put":
                table.items[key] = dict(request["Item"])
            elif kind == "Delete":
                table.items.pop(key, None)
        return {}

    # ---- SQS ------------------------------------------------------------------------------

    def _queue(self, url: object) -> MemoryQueue:
        queue = self.queues.get(str(url))
        if queue is None:
            raise MemoryAwsError(
                "AWS.SimpleQueueService.NonExistentQueue",
                "The specified queue does not exist.",
            )
        return queue

    def _send(self, queue: MemoryQueue, request: Mapping[str, Any]) -> dict[str, Any]:
        body = str(request["MessageBody"])
        attributes: dict[str, Any] = dict(request.get("MessageAttributes") or {})
        system: dict[str, str] = {
            "SentTimestamp": str(int(time.time() * 1000)),
            "ApproximateReceiveCount": "0",
            "SenderId": "AIDAMEMORYAWS",
        }
        answer: dict[str, Any] = {
            "MessageId": str(uuid.uuid4()),
            "MD5OfMessageBody": _md5(body.encode("utf-8")),
        }
        if attributes:
            answer["MD5OfMessageAttributes"] = _attributes_md5(attributes)
        if queue.fifo:
            group, dedup = request.get("MessageGroupId"), request.get("MessageDeduplicationId")
            if not group:
                raise MemoryAwsError(
                    "MissingParameter", "The request must contain the parameter MessageGroupId."
                )
            if not dedup:
                raise MemoryAwsError(
                    "InvalidParameterValue",
                    "The queue should either have ContentBasedDeduplication enabled or "
                    "MessageDeduplicationId provided explicitly",
                )
            now = self._clock()
            seen = queue.deduplication.get(dedup)
            if seen is not None and now - seen < FIFO_DEDUPLICATION_SECONDS:
                return answer  # accepted, not delivered again
            queue.deduplication[dedup] = now
            system.update(MessageGroupId=group, MessageDeduplicationId=dedup)
            answer["SequenceNumber"] = str(len(queue.deduplication)).zfill(20)
        queue.messages.append(
            {
                "MessageId": answer["MessageId"],
                "Body": body,
                "MD5OfBody": answer["MD5OfMessageBody"],
                "MessageAttributes": attributes,
                "Attributes": system,
                "ReceiptHandle": None,
            }
        )
        return answer

    def _sqs(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if operation == "CreateQueue":
            return {"QueueUrl": self.create_queue(params["QueueName"])}
        queue = self._queue(params["QueueUrl"])
        if operation == "SendMessage":
            return self._send(queue, params)
        if operation == "SendMessageBatch":
            successful = []
            for entry in params["Entries"]:
                sent = self._send(queue, entry)
                successful.append({"Id": entry["Id"], **sent})
            return {"Successful": successful, "Failed": []}
        if operation == "ReceiveMessage":
            return self._receive(queue, params)
        if operation in ("DeleteMessage", "DeleteMessageBatch"):
            entries = params.get("Entries") or [{"ReceiptHandle": params.get("ReceiptHandle")}]
            handles = {entry["ReceiptHandle"] for entry in entries}
            queue.messages = [m for m in queue.messages if m["ReceiptHandle"] not in handles]
            if operation == "DeleteMessage":
                return {}
            return {"Successful": [{"Id": entry["Id"]} for entry in entries], "Failed": []}
        if operation == "GetQueueAttributes":
            hidden = sum(1 for m in queue.messages if m["ReceiptHandle"] is not None)
            counts = {
                "ApproximateNumberOfMessages": str(len(queue.messages) - hidden),
                "ApproximateNumberOfMessagesNotVisible": str(hidden),
            }
            wanted = params.get("AttributeNames") or []
            return {
                "Attributes": {k: v for k, v in counts.items() if k in wanted or "All" in wanted}
            }
        raise NotImplementedError(f"memory SQS does not answer {operation}")

    def _receive(self, queue: MemoryQueue, params: Mapping[str, Any]) -> dict[str, Any]:
        peek = params.get("VisibilityTimeout") == 0
        wanted = int(params.get("MaxNumberOfMessages") or 1)
        received: list[dict[str, Any]] = []
        for message in queue.messages:
            if len(received) == wanted:
                break
            if message["ReceiptHandle"] is not None:
                continue  # in flight
            handle = "AQEB" + base64.b64encode(uuid.uuid4().bytes).decode("ascii")
            if not peek:
                message["ReceiptHandle"] = handle
            count = int(message["Attributes"]["ApproximateReceiveCount"]) + 1
            message["Attributes"]["ApproximateReceiveCount"] = str(count)
            answer = {k: v for k, v in message.items() if k != "MessageAttributes"}
            answer["ReceiptHandle"] = handle
            answer["Attributes"] = dict(message["Attributes"])
            if message["MessageAttributes"]:
                answer["MessageAttributes"] = dict(message["MessageAttributes"])
                answer["MD5OfMessageAttributes"] = _attributes_md5(message["MessageAttributes"])
            received.append(answer)
        return {"Messages": received} if received else {}


class _MemoryClient:
    """A boto3 client answered from memory: its operations, `meta` (events included) and
    `exceptions` are the real client's. An operation runs the client's `provide-client-params`
    and `before-parameter-build` hooks (the limits) and botocore's parameter validation, then is
    answered; the request serialization, endpoint resolution and signing an answer from memory
    never uses are skipped (so `before-call`, `before-send` and later hooks do not run). Waiters,
    paginators and anything else go to the real client, whose `before-call` hook answers from
    memory too."""

    def __init__(
        self,
        real: Any,
        respond: Callable[[str, str, dict[str, Any]], tuple[AWSResponse, dict[str, Any]]],
    ) -> None:
        self._real = real
        self._respond = respond
        self.meta = real.meta
        self.exceptions = real.exceptions
        self._service_id = real.meta.service_model.service_id.hyphenize()
        self._validator = ParamValidator()

    def __getattr__(self, name: str) -> Any:
        operation = self.meta.method_to_api_mapping.get(name)
        if operation is None:
            return getattr(self._real, name)

        def call(**params: Any) -> dict[str, Any]:
            return self._call(str(operation), params)

        return call

    def _call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        model = self.meta.service_model.operation_model(operation)
        context: dict[str, Any] = {}
        events, event = self.meta.events, f"{self._service_id}.{operation}"
        responses = events.emit(
            f"provide-client-params.{event}", params=params, model=model, context=context
        )
        params = first_non_none_response(responses, default=params)
        events.emit(f"before-parameter-build.{event}", params=params, model=model, context=context)
        report = self._validator.validate(params, model.input_shape)
        if report.has_errors():
            raise ParamValidationError(report=report.generate_report())
        http, parsed = self._respond(self._service_id, operation, params)
        if http.status_code >= 300:
            error_class = self.exceptions.from_code(parsed["Error"]["Code"])
            raise error_class(parsed, operation)
        return parsed


def _http(status: int) -> AWSResponse:
    return AWSResponse("https://memory.invalid/", status, HTTPHeaders(), None)


def _metadata(status: int) -> dict[str, Any]:
    return {"RequestId": str(uuid.uuid4()), "HTTPStatusCode": status, "HTTPHeaders": {}}
