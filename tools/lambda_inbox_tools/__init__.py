"""lambda_inbox_tools: the operator's tooling around the lambda_inbox library.

- `cli`: the `lambda-inbox` command line (extra `cli`: Typer, Rich).
- `local`: `lambda-inbox local`, a SAM template's tables, queues and event sources on local
  services (extra `local`: moto server, confluent-kafka, PyYAML).
- `redrive`: replaying dead letters (SQS's move task, or the client-side mover).
- `services`: the local services themselves (DynamoDB Local, a moto server) and their clients.

None of it is part of the Lambda layer, and the library never imports it.
"""
