"""`make sam-local`: the functions of template.yaml in containers with the real SAM CLI, offline.

1. Host: Debian's `docker.io` and `debootstrap` from apt when missing; `dockerd` started in the
   background when no Docker engine answers (and stopped at the end).
2. Image: a local stand-in for the Lambda Python 3.13 x86_64 image, built once by
   `scripts/build-lambda-image.sh` (nothing can be pulled here) and checked to start a container.
3. Template: a derived copy, `.aws-sam-local/template.yaml` (x86_64 instead of arm64; the endpoint
   and credential variables declared in every function, because `--env-vars` ignores undeclared
   ones), built with `sam build` into `.aws-sam-local/build` (layer wheels for x86_64).
4. Services: DynamoDB Local (`-sharedDb`), a moto server for SQS and a webhook receiver (2xx to
   every POST, calls counted per `Idempotency-Key`), reachable from the containers at the docker
   bridge address. Each phase gets its own tables and queues, created from template.yaml by the
   local stack's template reader (`lambda_inbox_tools.local`), named `<phase>-<LogicalId>`.
5. `sam local invoke` of every function with its sample events: `events/<source>-<subject>-*.json`
   goes to the function whose code folder names `<subject>` (`sqs-order-single.json` ->
   `functions/order_events`, `schedule-reaper-run.json` -> `functions/inbox_reaper`). Each
   response is printed and checked, then the tables, queues and webhook calls (SCENARIOS).
6. `sam local start-lambda --warm-containers EAGER` with the local stack's tables and queues in
   its `--env-vars` (`lambda_inbox_tools.local.sam_env`), driven by `lambda-inbox local
   --invoke-endpoint`: the template's event sources emulated (SQS, Kafka, the reaper's schedule)
   and the demo workload (duplicates, poison, a stuck lease, the redrive) run through the
   containers. Its report is printed; its invariants must hold.

Everything the run starts is stopped by process id, also on failure or interruption. Each step is
timed and every wait is bounded. Exit status 0 when every check passed, 1 otherwise.

Usage: make sam-local   (or .venv/bin/python scripts/sam_local.py --help); the modules of
this package, one step each, are driven by that script.
"""
