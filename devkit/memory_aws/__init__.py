"""DynamoDB tables and SQS queues in memory, answering real boto3 clients: for tests that make
thousands of calls (property-based fuzzing), where moto's per-call cost dominates.

`MemoryAws().client("dynamodb" | "sqs")` is an ordinary botocore client: the caller's parameters
go through botocore's own validation and serialization, the hooks of `lambda_inbox_tools.testing.limits` (always
registered: whatever SQS or DynamoDB would refuse is refused), and any hook the caller registers;
only the sending is replaced. A `before-call` hook answers from memory, in the parsed shape
botocore returns, and errors are botocore's modelled exceptions (`ConditionalCheckFailedException`,
`TransactionCanceledException` with `CancellationReasons`, `ValidationException`).

What it answers, and how far:

- DynamoDB: `CreateTable` / `DescribeTable` / `DeleteTable` / `UpdateTimeToLive` /
  `DescribeTimeToLive` (key schema only; indexes accepted and ignored; TTL remembered, nothing
  expires), `GetItem`, `PutItem`, `DeleteItem` (with
  `ConditionExpression`), `UpdateItem` (`SET a = :v` and `ADD n :v`, with a condition),
  `BatchGetItem` (top-level `ProjectionExpression`), `BatchWriteItem` (puts and deletes, at
  most 25, every one processed: what its request body holds, so that a hook may leave some
  out), `Scan` (one page, no filter), `Query` (the
  hash key's equality, one page) and `TransactWriteItems` (`Put`, `Delete`, `ConditionCheck`,
  `Update`; all or nothing, one action per item, at most 100). Condition expressions: `attribute_exists`,
  `attribute_not_exists`, `=`, `<>`, `<`, `<=`, `>`, `>=` on top-level attributes, `AND`, `OR`,
  `NOT`, parentheses. Refused as DynamoDB refuses them: items beyond 400 KB, missing or empty key
  attributes, text that is not UTF-8. Anything else raises `NotImplementedError`: use moto or
  DynamoDB Local for it. Reads are always consistent;
  a `TransactWriteItems` whose `ClientRequestToken` committed the same actions before changes
  nothing (another's is refused), the token kept until `clear_items`. `botocore_client(service)` is the plain botocore client, for
  hooks on `before-call` / `after-call`.
- SQS: `CreateQueue`, `SendMessage`, `SendMessageBatch`, `ReceiveMessage`, `DeleteMessage`,
  `DeleteMessageBatch`, `GetQueueAttributes` (message counts). FIFO queues (name ending in
  `.fifo`) need a group id and a deduplication id, and drop a message whose deduplication id was
  seen in the last 5 minutes, as SQS does. A received message stays invisible until deleted,
  unless received with `VisibilityTimeout=0`.
"""

from .service import MemoryAws
from .values import MemoryAwsError, item_size

__all__ = ["MemoryAws", "MemoryAwsError", "item_size"]
