"""Development helpers shared by the tests, `lambda-inbox local` and the benchmarks: local AWS,
fakes and event builders. Not part of the Lambda layer.

- `offline_aws`: fake credentials, no inherited profile or endpoint; clients for local endpoints.
- `dynamodb_local`: DynamoDB Local as a Java process; `queues`: the moto server, SQS queues.
- `tables`: the inbox and domain tables; `items`: reading items back; `app_state`: the example
  application's tables and queues with readers of their state.
- `handlers`: load a function's `app.py`, run an event through a consumer.
- `events`: SQS and Kafka events, sample events; `payloads`: OrderPlaced and PaymentCaptured.
- `limits`: the SQS and DynamoDB request limits moto does not enforce, as client hooks.
- `memory_aws`: DynamoDB tables and SQS queues in memory behind real boto3 clients.
- `lambda_context`: a fake Lambda context; `faults`: injected faults and crashes;
  `meters`: request counting; `emf`: EMF metric records in captured output.
- For the benchmarks: `network` (a modelled per-request delay), `profiling` (a cProfile of
  every thread), `callgrind` (instruction counts).
"""
