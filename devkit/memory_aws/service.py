"""`MemoryAws`: the DynamoDB and SQS operations the library calls, answered from memory."""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

import boto3
from botocore.awsrequest import AWSResponse

from lambda_inbox_tools.services.offline import ACCOUNT, REGION
from lambda_inbox_tools.services.queues import MOTO_SENDER_ID
from lambda_inbox_tools.testing.check.dynamodb.answers import as_client_values
from lambda_inbox_tools.testing.limits import enforce_dynamodb_key_limits, enforce_sqs_limits

from .client import _http, _MemoryClient, _metadata
from .conditions import _condition_holds
from .stores import MemoryQueue, MemoryTable, _attributes_md5, _md5, _project
from .updates import queried, updated
from .values import (
    _PARAMS,
    FIFO_DEDUPLICATION_SECONDS,
    MAX_BATCH_GET_KEYS,
    MAX_BATCH_WRITE_REQUESTS,
    MAX_TRANSACTION_ACTIONS,
    Item,
    MemoryAwsError,
    _check_item,
    _validation,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

#: DynamoDB: the largest item, in bytes (attribute names and values).

# ---- the service ----------------------------------------------------------------------------

#: One boto3 session for every `MemoryAws`: a session loads botocore's service models and
#: endpoint rules for its first clients (a new session's two clients cost 97 ms of CPU, a shared
#: one's 28 ms; the zoo and the check's unit tests make one `MemoryAws` per run). Sessions are
#: not thread-safe, so clients are made one at a time; the clients themselves are.
_SESSION = boto3.session.Session()
_SESSION_LOCK = threading.Lock()


class MemoryAws:
    """In-memory DynamoDB tables and SQS queues behind real boto3 clients (see the module)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.tables: dict[str, MemoryTable] = {}
        self.queues: dict[str, MemoryQueue] = {}
        #: `ClientRequestToken` -> the actions of the transaction it committed.
        self.tokens: dict[str, str] = {}
        self._clock = clock
        #: One request answered at a time: each is atomic, as DynamoDB's and SQS's are.
        self._lock = threading.Lock()

    @overload
    def client(self, service: Literal["dynamodb"]) -> DynamoDBClient: ...

    @overload
    def client(self, service: Literal["sqs"]) -> SQSClient: ...

    def client(self, service: Literal["dynamodb", "sqs"]) -> DynamoDBClient | SQSClient:
        """A boto3 client answered from memory, with the limits of `lambda_inbox_tools.testing.limits` enforced."""
        with _SESSION_LOCK:
            real: Any = _SESSION.client(
                service,
                region_name=REGION,
                endpoint_url=f"https://{service}.memory.invalid",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )

        def keep(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            context[_PARAMS] = params

        def respond(
            model: Any, context: dict[str, Any], params: dict[str, Any], **_: Any
        ) -> tuple[AWSResponse, dict[str, Any]]:
            operation, kept = str(model.name), context[_PARAMS]
            if operation == "BatchWriteItem":  # what is sent (a hook may leave some out)
                sent = json.loads(params["body"])["RequestItems"]
                kept = {**kept, "RequestItems": as_client_values(sent)}
            return self._respond(service, operation, kept)

        if service == "dynamodb":
            enforce_dynamodb_key_limits(real)
        else:
            enforce_sqs_limits(real)
        real.meta.events.register(f"before-parameter-build.{service}", keep)
        real.meta.events.register(f"before-call.{service}", respond)
        return _MemoryClient(real, self._respond)  # type: ignore[return-value]

    def botocore_client(self, service: Literal["dynamodb", "sqs"]) -> Any:
        """The plain botocore client behind `client(service)`: every call goes through botocore
        whole (`before-call` and `after-call` hooks included, as the testing kit's crashes need)
        and is answered from memory at `before-call`."""
        wrapper: Any = self.client(service)
        return wrapper._real

    def _respond(
        self, service: str, operation: str, params: dict[str, Any]
    ) -> tuple[AWSResponse, dict[str, Any]]:
        """The HTTP status and the parsed answer botocore would return."""
        answer = self._dynamodb if service == "dynamodb" else self._sqs
        try:
            with self._lock:
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
        self.tokens.clear()

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
            self._table(params["TableName"]).ttl = dict(params["TimeToLiveSpecification"])
            return {"TimeToLiveSpecification": params["TimeToLiveSpecification"]}
        if operation == "DescribeTimeToLive":
            ttl = self._table(params["TableName"]).ttl
            if not ttl or not ttl.get("Enabled"):
                return {"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}}
            described = {"TimeToLiveStatus": "ENABLED", "AttributeName": ttl["AttributeName"]}
            return {"TimeToLiveDescription": described}
        if operation == "GetItem":
            table = self._table(params["TableName"])
            item = table.items.get(table.key_of(params["Key"], what="key"))
            return {} if item is None else {"Item": _project(item, params)}
        if operation == "PutItem":
            table = self._table(params["TableName"])
            key = table.key_of(params["Item"])
            _check_item(params["Item"])
            current = table.items.get(key)
            if not _condition_holds(params, current):
                # As DynamoDB: the stored item comes back with the error when asked for.
                returned = params.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD"
                extra = {"Item": dict(current)} if returned and current else {}
                raise MemoryAwsError(
                    "ConditionalCheckFailedException", "The conditional request failed", **extra
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
        if operation == "BatchWriteItem":
            return self._batch_write(params["RequestItems"])
        if operation == "Scan":
            if set(params) - {"TableName", "ConsistentRead"}:
                raise NotImplementedError(f"memory DynamoDB: Scan with {sorted(params)}")
            table = self._table(params["TableName"])
            found = [dict(item) for item in table.items.values()]
            return {"Items": found, "Count": len(found), "ScannedCount": len(found)}
        if operation == "TransactWriteItems":
            return self._idempotent(params)
        if operation == "UpdateItem":
            table = self._table(params["TableName"])
            key = table.key_of(params["Key"], what="key")
            current = table.items.get(key)
            if not _condition_holds(params, current):
                raise MemoryAwsError(
                    "ConditionalCheckFailedException", "The conditional request failed"
                )
            item = updated(current, params["Key"], params)
            _check_item(item)
            table.items[key] = item
            return {}
        if operation == "Query":
            table = self._table(params["TableName"])
            found = queried(list(table.items.values()), table.key_names[0], params)
            return {"Items": found, "Count": len(found), "ScannedCount": len(found)}
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

    def _batch_write(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Every put and delete of the batch (at most 25, one per item), all processed."""
        if sum(len(entries) for entries in request.values()) > MAX_BATCH_WRITE_REQUESTS:
            raise _validation("Too many items requested for the BatchWriteItem call")
        for name, entries in request.items():
            table = self._table(name)
            keys = [
                table.key_of(e["PutRequest"]["Item"])
                if "PutRequest" in e
                else table.key_of(e["DeleteRequest"]["Key"], what="key")
                for e in entries
            ]
            if len(set(keys)) != len(keys):
                raise _validation("Provided list of item keys contains duplicates")
            for key, entry in zip(keys, entries, strict=True):
                if "PutRequest" in entry:
                    _check_item(entry["PutRequest"]["Item"])
                    table.items[key] = dict(entry["PutRequest"]["Item"])
                else:
                    table.items.pop(key, None)
        return {"UnprocessedItems": {}}

    def _idempotent(self, params: dict[str, Any]) -> dict[str, Any]:
        """A transaction whose `ClientRequestToken` already committed one with the same actions
        succeeds and changes nothing; with other actions it is refused (DynamoDB forgets a token
        after 10 minutes; here it is kept until `clear_items`)."""
        token = params.get("ClientRequestToken")
        actions = json.dumps(params["TransactItems"], sort_keys=True, default=str)
        if token is not None and token in self.tokens:
            if self.tokens[token] != actions:
                raise MemoryAwsError(
                    "IdempotentParameterMismatchException",
                    "The request uses the same client token as a previous, but non-identical "
                    "request.",
                )
            return {}
        answer = self._transact(params["TransactItems"])
        if token is not None:
            self.tokens[token] = actions
        return answer

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
            elif kind in ("Delete", "ConditionCheck", "Update"):
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
            elif kind == "Update":
                table.items[key] = updated(table.items.get(key), request["Key"], request)
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
            "SenderId": MOTO_SENDER_ID,  # one principal for every sender, as on moto
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
