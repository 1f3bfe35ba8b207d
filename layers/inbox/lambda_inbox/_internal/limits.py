"""The services' limits the library and its tools keep to, each written once (from each
service's quotas page; docs/aws-fidelity.md)."""

#: SQS: the largest message (body plus attribute names, data types and values), which is also
#: the most one `SendMessageBatch` carries in all, in bytes.
SQS_MAX_MESSAGE_BYTES = 256 * 1024
#: SQS: message attributes one message carries.
SQS_MAX_ATTRIBUTES = 10
#: Entries of one SQS `SendMessageBatch`, SNS `PublishBatch` or EventBridge `PutEvents` call.
MAX_BATCH_ENTRIES = 10
#: SNS: the largest message, in bytes.
SNS_MAX_MESSAGE_BYTES = 256 * 1024
#: EventBridge: the largest event entry, in bytes.
EVENTBRIDGE_MAX_ENTRY_BYTES = 256 * 1024
